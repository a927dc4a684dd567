package main

import (
	"context"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/service/telemetry"
)

type telemetryConfig struct {
	Logs struct {
		Level zapcore.Level `mapstructure:"level"`
	} `mapstructure:"logs"`
}

func newTelemetryFactory() telemetry.Factory {
	return telemetry.NewFactory(
		func() component.Config {
			c := &telemetryConfig{}
			c.Logs.Level = zapcore.InfoLevel
			return c
		},
		telemetry.WithCreateLogger(func(_ context.Context, set telemetry.LoggerSettings, cfg component.Config) (*zap.Logger, component.ShutdownFunc, error) {
			zc := zap.NewProductionConfig()
			zc.Level = zap.NewAtomicLevelAt(cfg.(*telemetryConfig).Logs.Level)
			zc.Encoding = "console"
			zc.EncoderConfig = zap.NewDevelopmentEncoderConfig()
			zc.Sampling = nil
			zc.OutputPaths = []string{"stderr"}
			l, err := set.BuildZapLogger(zc)
			return l, nil, err
		}),
	)
}

package main

import (
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/debugexporter"
	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
)

const (
	otlpReceiverModule  = "go.opentelemetry.io/collector/receiver/otlpreceiver v0.165.0"
	debugExporterModule = "go.opentelemetry.io/collector/exporter/debugexporter v0.165.0"
)

// components lists the factories this collector is built with. No
// extensions, processors or connectors are included.
func components() (otelcol.Factories, error) {
	factories := otelcol.Factories{
		// The collector's own logs/metrics/traces; the same default ocb uses.
		Telemetry: newTelemetryFactory(),
	}

	var err error
	factories.Receivers, err = otelcol.MakeFactoryMap[receiver.Factory](
		otlpreceiver.NewFactory(),
	)
	if err != nil {
		return otelcol.Factories{}, err
	}
	factories.ReceiverModules = map[component.Type]string{
		otlpreceiver.NewFactory().Type(): otlpReceiverModule,
	}

	factories.Exporters, err = otelcol.MakeFactoryMap[exporter.Factory](
		debugexporter.NewFactory(),
	)
	if err != nil {
		return otelcol.Factories{}, err
	}
	factories.ExporterModules = map[component.Type]string{
		debugexporter.NewFactory().Type(): debugExporterModule,
	}

	return factories, nil
}

// Command otelcol is a minimal OpenTelemetry Collector used by the tRPC
// tests: it has only the OTLP receiver and the debug exporter.
//
// It is written by hand after the shape of the files that the collector's
// builder (ocb) generates for v0.165.0, so that it needs no extra tool.
package main

import (
	"os"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/envprovider"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/confmap/provider/yamlprovider"
	"go.opentelemetry.io/collector/otelcol"
)

func main() {
	settings := otelcol.CollectorSettings{
		BuildInfo: component.BuildInfo{
			Command:     "otelcol",
			Description: "Minimal OpenTelemetry Collector for tRPC tests (OTLP receiver, debug exporter)",
			Version:     "0.165.0",
		},
		Factories: components,
		ConfigProviderSettings: otelcol.ConfigProviderSettings{
			ResolverSettings: confmap.ResolverSettings{
				// file: for --config=path, env: for ${env:VAR}, yaml: for
				// --set style overrides on the command line.
				ProviderFactories: []confmap.ProviderFactory{
					envprovider.NewFactory(),
					fileprovider.NewFactory(),
					yamlprovider.NewFactory(),
				},
			},
		},
		// Shown by `otelcol components`.
		ProviderModules: map[string]string{
			"env":  "go.opentelemetry.io/collector/confmap/provider/envprovider v1.71.0",
			"file": "go.opentelemetry.io/collector/confmap/provider/fileprovider v1.71.0",
			"yaml": "go.opentelemetry.io/collector/confmap/provider/yamlprovider v1.71.0",
		},
	}

	// cobra already prints the error; just set the exit status.
	if err := otelcol.NewCommand(settings).Execute(); err != nil {
		os.Exit(1)
	}
}

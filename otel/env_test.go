package otel_test

import (
	"bytes"
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/bridge/bridgetest"
	"github.com/bridge-dev/bridge/otel"
	"github.com/bridge-dev/bridge/otel/oteltest"
	"github.com/bridge-dev/bridge/outbound"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func fromEnv(t *testing.T, env map[string]string, console io.Writer) *otel.Telemetry {
	t.Helper()
	tel, err := otel.FromEnv(t.Context(), otel.EnvConfig{Getenv: envOf(env), Console: console})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	return tel
}

func TestFromEnvErrors(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"unknown exporter", map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, "unknown exporter"},
		{"none and otlp", map[string]string{"OTEL_TRACES_EXPORTER": "none,otlp"}, "cannot be combined"},
		{"grpc", map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, "not supported"},
		{"sampler", map[string]string{"OTEL_TRACES_EXPORTER": "console", "OTEL_TRACES_SAMPLER": "sometimes"}, "unknown sampler"},
		{"ratio", map[string]string{"OTEL_TRACES_EXPORTER": "console", "OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "2"}, "ratio"},
		{"resource", map[string]string{"OTEL_RESOURCE_ATTRIBUTES": "novalue"}, "key=value"},
		{"metrics", map[string]string{"OTEL_METRICS_EXPORTER": "otlp"}, "prometheus or none"},
		{"content", map[string]string{"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "maybe"}, "true or false"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tel, err := otel.FromEnv(t.Context(), otel.EnvConfig{Getenv: envOf(tt.env), Console: io.Discard})
			if err == nil {
				_ = tel.Shutdown(t.Context())
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not say %q", err, tt.want)
			}
		})
	}
}

// TestFromEnvNone: with nothing set no span records and no metrics are
// served, but a span context still propagates.
func TestFromEnvNone(t *testing.T) {
	for _, env := range []map[string]string{{}, {"OTEL_TRACES_EXPORTER": "none"}, {"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}} {
		tel := fromEnv(t, env, io.Discard)
		_, span := tel.Tracer().Start(t.Context(), "x")
		if span.IsRecording() {
			t.Errorf("env %v: span records", env)
		}
		span.End()
		if tel.MetricsHandler() != nil {
			t.Errorf("env %v: metrics are served", env)
		}
	}
}

func TestFromEnvSampler(t *testing.T) {
	tests := []struct {
		sampler, arg string
		recording    bool
	}{
		{"", "", true},
		{"always_on", "", true},
		{"always_off", "", false},
		{"parentbased_always_off", "", false},
		{"traceidratio", "0", false},
		{"parentbased_traceidratio", "1", true},
	}
	for _, tt := range tests {
		tel := fromEnv(t, map[string]string{"OTEL_TRACES_EXPORTER": "console", "OTEL_TRACES_SAMPLER": tt.sampler,
			"OTEL_TRACES_SAMPLER_ARG": tt.arg}, io.Discard)
		_, span := tel.Tracer().Start(t.Context(), "x")
		if span.IsRecording() != tt.recording {
			t.Errorf("sampler %q arg %q: recording %v, want %v", tt.sampler, tt.arg, span.IsRecording(), tt.recording)
		}
		span.End()
	}
}

// TestFromEnvConsole: the console exporter writes the span, with the
// resource from OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, at Shutdown.
func TestFromEnvConsole(t *testing.T) {
	var buf bytes.Buffer
	tel, err := otel.FromEnv(t.Context(), otel.EnvConfig{Console: &buf, Getenv: envOf(map[string]string{
		"OTEL_TRACES_EXPORTER": "console", "OTEL_SERVICE_NAME": "bridge-test",
		"OTEL_RESOURCE_ATTRIBUTES": "deployment.environment.name=staging,team=a%2Cb,service.name=ignored",
	})})
	if err != nil {
		t.Fatal(err)
	}
	_, span := tel.Tracer().Start(t.Context(), "console-span")
	span.End()
	if err := tel.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{`"Name":"console-span"`, `"Value":"bridge-test"`, `"Value":"staging"`, `"Value":"a,b"`} {
		if !strings.Contains(out, want) {
			t.Errorf("console output lacks %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, "ignored") {
		t.Error("OTEL_SERVICE_NAME did not win over the resource attribute")
	}
	if err := tel.Shutdown(t.Context()); err != nil {
		t.Errorf("second Shutdown: %v", err)
	}
}

// TestFromEnvOTLP: OTEL_EXPORTER_OTLP_ENDPOINT alone turns the OTLP
// exporter on; Shutdown flushes the batch to the receiver.
func TestFromEnvOTLP(t *testing.T) {
	for _, key := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"} {
		t.Run(key, func(t *testing.T) {
			rcv := oteltest.NewReceiver()
			defer rcv.Close()
			url := rcv.URL
			if key == "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT" {
				url += "/v1/traces" // used as it is
			}
			tel, err := otel.FromEnv(t.Context(), otel.EnvConfig{Getenv: envOf(map[string]string{key: url})})
			if err != nil {
				t.Fatal(err)
			}
			_, span := tel.Tracer().Start(t.Context(), "exported")
			span.End()
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			if err := tel.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			s := rcv.Named("exported")
			if s == nil || s.Service != "bridge" || len(s.TraceID) != 32 {
				t.Fatalf("received %+v", rcv.Spans())
			}
		})
	}
}

// TestFromEnvPrometheus: OTEL_METRICS_EXPORTER=prometheus serves the run
// metrics in the Prometheus text format.
func TestFromEnvPrometheus(t *testing.T) {
	tel := fromEnv(t, map[string]string{"OTEL_METRICS_EXPORTER": "prometheus"}, io.Discard)
	h := tel.MetricsHandler()
	if h == nil {
		t.Fatal("no metrics handler")
	}
	up := &bridgetest.Upstream{UpName: "s", UpDialect: "openai", Events: bridgetest.TextEvents("a", "b")}
	wrapped := outbound.Wrap(up, tel.Upstream(up, otel.GenAI{Provider: "openai", Operation: "chat"}))
	call, err := wrapped.Open(t.Context(), &bridge.Request{Inbound: "anthropic", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	for range call.Events {
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{
		`bridge_runs_started_total{bridge_dialect_inbound="anthropic",bridge_dialect_outbound="openai"`,
		`bridge_runs_ended_total{bridge_dialect_inbound="anthropic",bridge_dialect_outbound="openai",bridge_run_outcome="completed"`,
		`bridge_run_time_to_first_token_seconds_bucket{`,
		`bridge_run_duration_seconds_count{`,
		`bridge_streams_active{`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s\n%s", want, body)
		}
	}
}

package otel

import (
	"net"
	"net/http"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// HeaderRunID is the response header the inbound handlers name their run
// in; the server span copies it into bridge.run.id.
const HeaderRunID = "X-Run-Id"

// Handler wraps next (a ServeMux, or a handler that routes with one) so
// every request gets a server span, child of the request's traceparent when
// it has one. The span is named "METHOD ROUTE" after the route pattern the
// mux matched (r.Pattern, read once next returns), never the raw path;
// requests no pattern matched keep the bare method. A request that resumes
// a stream from a cursor gets a resume event. Requests for the paths
// in skip (such as /healthz and /metrics) get no span.
//
// The remote parent is put in the request's context even when the tracer
// provider is a no-op one, so the engine's run still carries its trace id.
func (t *Telemetry) Handler(next http.Handler, skip ...string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, p := range skip {
			if r.URL.Path == p {
				next.ServeHTTP(w, r)
				return
			}
		}
		ctx := t.prop.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		ctx, span := t.tracer.Start(ctx, r.Method, trace.WithSpanKind(trace.SpanKindServer))
		if !span.IsRecording() {
			next.ServeHTTP(w, r.WithContext(ctx))
			return
		}
		defer span.End()
		span.SetAttributes(serverAttributes(r)...)
		if c := resumeCursor(r); c != "" {
			span.AddEvent(EventResume, trace.WithAttributes(attrResumeCursor.String(c)))
		}
		rw := &responseWriter{ResponseWriter: w}
		r = r.WithContext(ctx)
		next.ServeHTTP(rw, r) // the mux sets r.Pattern on this very request
		status := rw.status
		if status == 0 {
			status = http.StatusOK
		}
		if route := routeOf(r.Pattern); route != "" {
			span.SetName(r.Method + " " + route)
			span.SetAttributes(semconv.HTTPRoute(route))
		}
		span.SetAttributes(semconv.HTTPResponseStatusCode(status))
		if id := rw.Header().Get(HeaderRunID); id != "" {
			span.SetAttributes(attrRunID.String(id))
		}
		if status >= 500 {
			span.SetStatus(codes.Error, "")
			span.SetAttributes(semconv.ErrorTypeKey.String(strconv.Itoa(status)))
		}
	})
}

// EventResume is the span event of a request that resumes a stream from
// a cursor (Last-Event-ID, or the run API's ?after=); the engine adds one
// of the same name to the run span of a run continued by its client's tool
// results.
const EventResume = "resume"

var attrResumeCursor = attribute.Key("bridge.resume.cursor")

// resumeCursor is the cursor a request resumes from, "" for none.
func resumeCursor(r *http.Request) string {
	if v := r.Header.Get("Last-Event-ID"); v != "" {
		return v
	}
	if r.URL.RawQuery == "" {
		return ""
	}
	return r.URL.Query().Get("after")
}

// routeOf returns the path template of a ServeMux pattern
// ("[METHOD ][HOST]/path"): "POST /v1/runs/{run}" -> "/v1/runs/{run}".
func routeOf(pattern string) string {
	if pattern == "" {
		return ""
	}
	if _, rest, ok := strings.Cut(pattern, " "); ok {
		pattern = strings.TrimLeft(rest, " \t")
	}
	if i := strings.IndexByte(pattern, '/'); i > 0 {
		pattern = pattern[i:] // drop a host
	}
	return pattern
}

// serverAttributes are the HTTP semantic-convention attributes known before
// the handler runs.
func serverAttributes(r *http.Request) []attribute.KeyValue {
	attrs := make([]attribute.KeyValue, 0, 9)
	switch r.Method {
	case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch,
		http.MethodHead, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		attrs = append(attrs, semconv.HTTPRequestMethodKey.String(r.Method))
	default:
		attrs = append(attrs, semconv.HTTPRequestMethodOther, semconv.HTTPRequestMethodOriginal(r.Method))
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	attrs = append(attrs, semconv.URLScheme(scheme), semconv.URLPath(r.URL.Path))
	if host, port := hostPort(r.Host); host != "" {
		attrs = append(attrs, semconv.ServerAddress(host))
		if port > 0 {
			attrs = append(attrs, semconv.ServerPort(port))
		}
	}
	if r.ProtoMajor == 1 {
		attrs = append(attrs, semconv.NetworkProtocolVersion("1."+strconv.Itoa(r.ProtoMinor)))
	} else if r.ProtoMajor > 1 {
		attrs = append(attrs, semconv.NetworkProtocolVersion(strconv.Itoa(r.ProtoMajor)))
	}
	if ua := r.UserAgent(); ua != "" {
		attrs = append(attrs, semconv.UserAgentOriginal(ua))
	}
	if host, _ := hostPort(r.RemoteAddr); host != "" {
		attrs = append(attrs, semconv.ClientAddress(host))
	}
	return attrs
}

// responseWriter remembers the status. It passes Flush through and unwraps
// for http.ResponseController, so SSE streams keep flushing.
type responseWriter struct {
	http.ResponseWriter
	status int
}

func (w *responseWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *responseWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(p)
}

// Flush implements http.Flusher.
func (w *responseWriter) Flush() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the server's writer.
func (w *responseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Transport returns a RoundTripper that injects the request context's trace
// context (traceparent, tracestate) and baggage into every request it sends
// through base (http.DefaultTransport when nil). It makes no span of its
// own: the upstream middleware's client span is the traceparent's parent.
func (t *Telemetry) Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &transport{base: base, prop: t.prop}
}

type transport struct {
	base http.RoundTripper
	prop propagation.TextMapPropagator
}

// RoundTrip implements http.RoundTripper. The caller's request is not
// modified: the headers are copied first.
func (t *transport) RoundTrip(r *http.Request) (*http.Response, error) {
	r2 := *r
	r2.Header = r.Header.Clone()
	if r2.Header == nil {
		r2.Header = http.Header{}
	}
	t.prop.Inject(r.Context(), propagation.HeaderCarrier(r2.Header))
	return t.base.RoundTrip(&r2)
}

// hostPort splits a Host header into address and port (0 when absent).
func hostPort(hp string) (string, int) {
	h, p, err := net.SplitHostPort(hp)
	if err != nil {
		return hp, 0
	}
	n, _ := strconv.Atoi(p)
	return h, n
}

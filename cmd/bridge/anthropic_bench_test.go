package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/outbound/openai/openaitest"
)

// BenchmarkAnthropicOverOpenAI measures the time to first byte of an
// Anthropic Messages stream through the bridge to an OpenAI upstream,
// against the floor: a bare httputil.ReverseProxy in front of the same
// upstream, in the same run, the two requests of each iteration in turns.
// The upstream (a local openaitest server) streams 40 word chunks, a
// finish and usage as fast as it can; each request is read to its end.
//
// Reported: the median time to first byte of each (bridge-ttfb-p50-µs,
// proxy-ttfb-p50-µs, and the upstream's own, direct-ttfb-p50-µs), their
// ratio (ttfb-ratio), what the bridge adds to the upstream's time in units
// of what the proxy adds (added/floor-added: the bound is 2), and
// the medians of the time
// to the first text (the first content_block_delta, the first content
// chunk): the bridge flushes each upstream chunk as its Anthropic event, so
// the text does not come later than the byte does by more than the chunk
// gap.
//
//	go test -run '^$' -bench AnthropicOverOpenAI -benchtime 2000x -count 3 ./cmd/bridge/
func BenchmarkAnthropicOverOpenAI(b *testing.B) {
	up := openaitest.New(func(int, []byte) openaitest.Reply {
		c := &openaitest.Chunks{ID: "chatcmpl-bench", Model: "gpt-bench"}
		words := make([]string, 40)
		for i := range words {
			words[i] = "word "
		}
		return openaitest.Reply{Chunks: c.Role().Text(words...).Finish("stop").Usage(12, 40).List()}
	})
	b.Cleanup(up.Close)
	cfg := defaultConfig()
	cfg.Upstreams = []Upstream{{Dialect: "openai", URL: up.BaseURL()}}
	m := startBenchMain(b, cfg)
	bridgeURL := "http://" + m.Addr() + "/v1/messages"

	target, _ := url.Parse(up.URL)
	proxy := &http.Server{Handler: &httputil.ReverseProxy{
		Rewrite:       func(pr *httputil.ProxyRequest) { pr.SetURL(target) },
		FlushInterval: -1, // flush each write, as a streaming proxy must
		ErrorLog:      log.New(io.Discard, "", 0),
	}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = proxy.Serve(ln) }()
	b.Cleanup(func() { _ = proxy.Close() })
	proxyURL := "http://" + ln.Addr().String() + "/v1/chat/completions"

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	b.Cleanup(client.CloseIdleConnections)
	const anthBody = `{"model":"claude-bench","max_tokens":256,"stream":true,"messages":[{"role":"user","content":"Say forty words."}]}`
	const oaBody = `{"model":"gpt-bench","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Say forty words."}]}`

	oaURL := "http://" + m.Addr() + "/v1/chat/completions"

	directURL := up.BaseURL() + "/chat/completions"
	var bridgeFirst, bridgeText, proxyFirst, proxyText, oaFirst, directFirst []time.Duration
	retries := 0
	// measure runs one request, again when its connection broke (a loaded
	// machine drops the odd keep-alive connection; the retries are counted).
	measure := func(url, body, text string) (time.Duration, time.Duration) {
		for i := 0; ; i++ {
			f, tx, err := timeStream(client, url, body, text)
			if err == nil {
				return f, tx
			}
			if i == 3 {
				b.Fatal(err)
			}
			retries++
		}
	}
	for b.Loop() {
		f, tx := measure(bridgeURL, anthBody, `"type":"content_block_delta"`)
		bridgeFirst, bridgeText = append(bridgeFirst, f), append(bridgeText, tx)
		f, tx = measure(proxyURL, oaBody, `"content":"word `)
		proxyFirst, proxyText = append(proxyFirst, f), append(proxyText, tx)
		f, _ = measure(oaURL, oaBody, `"content":"word `)
		oaFirst = append(oaFirst, f)
		f, _ = measure(directURL, oaBody, `"content":"word `)
		directFirst = append(directFirst, f)
	}
	b.ReportMetric(float64(retries), "retries")
	bf, pf := anthMedian(bridgeFirst), anthMedian(proxyFirst)
	b.ReportMetric(float64(bf.Microseconds()), "bridge-ttfb-p50-µs")
	b.ReportMetric(float64(pf.Microseconds()), "proxy-ttfb-p50-µs")
	b.ReportMetric(float64(bf)/float64(max(pf, 1)), "ttfb-ratio")
	// The bound: what the bridge adds to the upstream's own time to
	// first byte at most 2x what the bare proxy adds (added/floor-added).
	df := anthMedian(directFirst)
	b.ReportMetric(float64(df.Microseconds()), "direct-ttfb-p50-µs")
	b.ReportMetric(float64(bf-df)/float64(max(pf-df, 1)), "added/floor-added")
	b.ReportMetric(float64(anthMedian(bridgeText).Microseconds()), "bridge-text-p50-µs")
	b.ReportMetric(float64(anthMedian(proxyText).Microseconds()), "proxy-text-p50-µs")
	// The same bridge's OpenAI inbound over the same upstream: what the
	// engine (run record, commit before fan-out) costs whatever the dialect.
	b.ReportMetric(float64(anthMedian(oaFirst).Microseconds()), "bridge-openai-ttfb-p50-µs")
}

// timeStream posts body and reads the stream to its end; it returns the
// time to the first body byte and to the first line containing text.
func timeStream(client *http.Client, url, body, text string) (first, firstText time.Duration, err error) {
	start := time.Now()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-api-key", "bench")
	resp, err := client.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(resp.Body)
		return 0, 0, fmt.Errorf("%s: status %d: %s", url, resp.StatusCode, msg)
	}
	r := bufio.NewReader(resp.Body)
	if _, err := r.Peek(1); err != nil {
		return 0, 0, fmt.Errorf("%s: %w", url, err)
	}
	first = time.Since(start)
	for {
		line, err := r.ReadSlice('\n')
		if firstText == 0 && bytes.Contains(line, []byte(text)) {
			firstText = time.Since(start)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %w", url, err)
		}
	}
	if firstText == 0 {
		return 0, 0, fmt.Errorf("%s: no text in the stream", url)
	}
	return first, firstText, nil
}

func anthMedian(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

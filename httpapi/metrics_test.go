package httpapi_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/httpapi"
	"github.com/graphserver/graphserver/internal/graphtest"
	"github.com/graphserver/graphserver/sqlite"
)

// sendFunc is a graphserver.WebhookSender.
type sendFunc func(ctx context.Context, url string, body []byte, headers map[string]string) (int, error)

func (f sendFunc) Send(ctx context.Context, url string, body []byte, headers map[string]string) (int, error) {
	return f(ctx, url, body, headers)
}

// families is a parsed /metrics scrape.
type families map[string]*dto.MetricFamily

// scrape fetches and parses /metrics.
func scrape(t *testing.T, url string) families {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	return fams
}

// metric returns the metric of family name whose labels include want
// (name=value pairs), failing when there is none.
func (f families) metric(t *testing.T, name string, want ...string) *dto.Metric {
	t.Helper()
	_, ok := f[name]
	require.True(t, ok, "family %s is missing", name)
	m := f.find(name, want...)
	if m == nil {
		require.Failf(t, "no metric", "%s%v in %v", name, want, f[name].Metric)
	}
	return m
}

// find is metric, nil when there is none: for conditions polled until a
// metric appears (a family is exported once it has a sample).
func (f families) find(name string, want ...string) *dto.Metric {
	fam, ok := f[name]
	if !ok {
		return nil
	}
next:
	for _, m := range fam.Metric {
		labels := map[string]string{}
		for _, l := range m.Label {
			labels[l.GetName()] = l.GetValue()
		}
		for _, kv := range want {
			k, v, _ := strings.Cut(kv, "=")
			if labels[k] != v {
				continue next
			}
		}
		return m
	}
	return nil
}

// value is the value of a counter or gauge, or the sample count of a
// histogram.
func (f families) value(t *testing.T, name string, want ...string) float64 {
	t.Helper()
	return metricValue(f.metric(t, name, want...))
}

// valueIs reports whether the metric exists and has value v (see value).
func (f families) valueIs(v float64, name string, want ...string) bool {
	m := f.find(name, want...)
	return m != nil && metricValue(m) == v
}

// metricValue is the value of a counter or gauge, or the sample count of
// a histogram.
func metricValue(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return -1
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "gs.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	block := graphtest.NewBlocking()
	hookStatus := make(chan int, 2)
	hookStatus <- 503
	hookStatus <- 204
	srv, err := graphserver.New(graphserver.Options{
		Storage: db,
		Graphs:  map[string]graphserver.Graph{"echo": graphtest.Echo{}, "fail": graphtest.Fail{}, "block": block},
		Webhooks: graphserver.WebhookOptions{
			Sender:  sendFunc(func(context.Context, string, []byte, map[string]string) (int, error) { return <-hookStatus, nil }),
			Policy:  graphserver.WebhookPolicy{AllowPrivate: true},
			Backoff: time.Millisecond,
		},
	})
	require.NoError(t, err)
	require.NoError(t, srv.Start(ctx))
	t.Cleanup(func() {
		block.Release()
		require.NoError(t, srv.Close(context.WithoutCancel(ctx)))
	})
	ts := httptest.NewServer(httpapi.New(srv, httpapi.Options{Metrics: true}))
	t.Cleanup(ts.Close)

	do := func(method, path, body string) int {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, ts.URL+path, strings.NewReader(body))
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	newThread := func() string {
		th, err := srv.CreateThread(ctx, graphserver.ThreadCreate{})
		require.NoError(t, err)
		return th.ThreadID
	}

	// Real traffic: runs that succeed, fail, deliver a webhook (after one
	// retry), wait in the queue, and one that blocks while a client streams it.
	tid := newThread()
	require.Equal(t, 200, do("POST", "/threads", `{}`))
	require.Equal(t, 200, do("POST", "/threads/"+tid+"/runs/wait", `{"assistant_id":"echo","input":{"x":1},"webhook":"http://127.0.0.1:9/hook"}`))
	require.Equal(t, 200, do("POST", "/threads/"+tid+"/runs/wait", `{"assistant_id":"fail"}`))
	require.Equal(t, 404, do("GET", "/threads/"+missingID, ""))
	require.Equal(t, 404, do("GET", "/no/such/route", ""))
	require.Equal(t, 200, do("POST", "/threads/"+newThread()+"/runs", `{"assistant_id":"echo","after_seconds":3600}`))

	blocked := newThread()
	req, err := http.NewRequestWithContext(ctx, "POST", ts.URL+"/threads/"+blocked+"/runs/stream", strings.NewReader(`{"assistant_id":"block","stream_mode":["values"]}`))
	require.NoError(t, err)
	stream, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer stream.Body.Close()
	<-block.Started
	// A second run on the blocked thread waits behind the first.
	require.Equal(t, 200, do("POST", "/threads/"+blocked+"/runs", `{"assistant_id":"echo"}`))
	require.Eventually(t, func() bool {
		f := scrape(t, ts.URL)
		return f.valueIs(1, "graphserver_webhook_deliveries_total", "outcome=delivered")
	}, 10*time.Second, 5*time.Millisecond)

	f := scrape(t, ts.URL)
	// HTTP requests by route pattern and status, with latencies.
	require.Equal(t, 1.0, f.value(t, "graphserver_http_requests_total", "method=POST", "route=/threads", "code=200"))
	require.Equal(t, 2.0, f.value(t, "graphserver_http_requests_total", "method=POST", "route=/threads/{thread_id}/runs/wait", "code=200"))
	require.Equal(t, 1.0, f.value(t, "graphserver_http_requests_total", "method=GET", "route=/threads/{thread_id}", "code=404"))
	require.Equal(t, 1.0, f.value(t, "graphserver_http_requests_total", "method=GET", "route=unmatched", "code=404"))
	require.Equal(t, 2.0, f.value(t, "graphserver_http_request_duration_seconds", "method=POST", "route=/threads/{thread_id}/runs/wait"))
	require.Equal(t, 1.0, f.value(t, "graphserver_http_streams_active"))

	// Runs by status and their duration; queue depth and wait.
	require.Equal(t, 5.0, f.value(t, "graphserver_runs_created_total"))
	require.Equal(t, 3.0, f.value(t, "graphserver_runs_started_total"))
	require.Equal(t, 1.0, f.value(t, "graphserver_runs_ended_total", "status=success"))
	require.Equal(t, 1.0, f.value(t, "graphserver_runs_ended_total", "status=error"))
	require.Equal(t, 1.0, f.value(t, "graphserver_run_duration_seconds", "status=success"))
	require.Positive(t, f.metric(t, "graphserver_run_duration_seconds", "status=success").Histogram.GetSampleSum())
	require.Equal(t, 3.0, f.value(t, "graphserver_run_queue_wait_seconds"))
	require.Equal(t, 1.0, f.value(t, "graphserver_run_queue_depth"), "the run behind the blocked one")
	require.Equal(t, 1.0, f.value(t, "graphserver_run_queue_delayed"))
	require.Equal(t, 1.0, f.value(t, "graphserver_runs_running"))
	require.Equal(t, 1.0, f.value(t, "graphserver_runs_executing"))
	require.GreaterOrEqual(t, f.value(t, "graphserver_event_logs"), 1.0)
	require.Equal(t, 1.0, f.value(t, "graphserver_stream_subscribers"))

	// Webhook deliveries and retries.
	require.Equal(t, 1.0, f.value(t, "graphserver_webhook_retries_total"))
	require.Equal(t, 2.0, f.value(t, "graphserver_webhook_attempt_duration_seconds"))

	// SQLite's grouped writes.
	groups := f.metric(t, "graphserver_storage_write_group_size").Histogram
	require.Positive(t, groups.GetSampleCount())
	require.GreaterOrEqual(t, groups.GetSampleSum(), float64(groups.GetSampleCount()))
	require.Equal(t, groups.GetSampleCount(), f.metric(t, "graphserver_storage_write_group_duration_seconds").Histogram.GetSampleCount())
	require.Equal(t, groups.GetSampleCount(), f.metric(t, "graphserver_storage_write_group_wait_seconds").Histogram.GetSampleCount())

	// The Go runtime and process collectors come with the default registry.
	require.Contains(t, f, "go_goroutines")

	// Cancelling the streamed run ends it as interrupted and closes the stream.
	loc := stream.Header.Get("Content-Location")
	runID := loc[strings.LastIndex(loc, "/")+1:]
	require.NotEmpty(t, runID)
	require.Equal(t, 202, do("POST", "/threads/"+blocked+"/runs/"+runID+"/cancel", ""))
	_, err = io.Copy(io.Discard, stream.Body) // the stream ends
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		f := scrape(t, ts.URL)
		return f.valueIs(1, "graphserver_runs_ended_total", "status=interrupted") &&
			f.valueIs(0, "graphserver_http_streams_active") && f.valueIs(0, "graphserver_runs_executing")
	}, 10*time.Second, 5*time.Millisecond)
}

func TestMetricsOff(t *testing.T) {
	t.Parallel()
	ts := httptest.NewServer(httpapi.New(newServer(t), httpapi.Options{}))
	t.Cleanup(ts.Close)
	resp, err := http.Get(ts.URL + "/metrics")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}

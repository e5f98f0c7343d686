package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/graphserver/graphserver"
)

// metricsNamespace prefixes every family graphserver exports.
const metricsNamespace = "graphserver"

// statsTimeout bounds the storage read of a scrape (the queue counts).
const statsTimeout = 5 * time.Second

// metrics is the Prometheus instrumentation of a handler
// (Options.Metrics). It observes HTTP requests in the instrument
// middleware, SSE streams in writeSSE, and everything else through the
// Server: it is a graphserver.Observer for runs, webhooks and the storage's
// grouped writes, and reads Server.Stats at each scrape for the gauges.
//
// Families (all prefixed graphserver_):
//
//	http_requests_total{method,route,code}           requests by route pattern and status
//	http_request_duration_seconds{method,route}      request latency (a stream lasts as long as its run)
//	http_streams_active                               SSE responses being written
//	runs_created_total, runs_started_total            runs created; attempts started by this process's workers
//	runs_ended_total{status}                          ended runs: success, error, timeout, interrupted, rolled_back
//	runs_released_total{reason}                       attempts handed back to the queue (server closing, lease lost, lease expired)
//	run_duration_seconds{status}                      running time of the attempts that ended here
//	run_queue_wait_seconds                            time from claimable to started, first attempts
//	run_queue_depth, run_queue_delayed                pending runs claimable now / waiting for after_seconds (storage)
//	runs_running                                      runs claimed by any worker (storage)
//	runs_executing                                    runs executing in this process
//	event_logs                                        runs whose events this process records
//	stream_subscribers                                consumers following runs (streams, waits, joins)
//	webhook_deliveries_total{outcome}                 deliveries ended: delivered, failed
//	webhook_retries_total                             attempts that failed and will be retried
//	webhook_attempt_duration_seconds                  duration of each attempt
//	storage_write_group_size                          writes per grouped transaction
//	storage_write_group_duration_seconds              grouped transaction latency, begin to commit
//	storage_write_group_wait_seconds                  time its oldest write queued for a grouped transaction
//	storage_write_group_errors_total                  grouped transactions that failed to commit
type metrics struct {
	srv      *graphserver.Server
	gatherer prometheus.Gatherer
	handler  http.Handler

	httpRequests *prometheus.CounterVec
	httpDuration *prometheus.HistogramVec
	httpStreams  prometheus.Gauge

	runsCreated  prometheus.Counter
	runsStarted  prometheus.Counter
	runsEnded    *prometheus.CounterVec
	runsReleased *prometheus.CounterVec
	runDuration  *prometheus.HistogramVec
	queueWait    prometheus.Histogram

	webhookDeliveries *prometheus.CounterVec
	webhookRetries    prometheus.Counter
	webhookDuration   prometheus.Histogram

	groupSize     prometheus.Histogram
	groupDuration prometheus.Histogram
	groupWait     prometheus.Histogram
	groupErrors   prometheus.Counter

	queueDepth, queueDelayed, runsRunning, runsExecuting, eventLogs, subscribers *prometheus.Desc
}

// runBuckets spans 5 ms to about 20 minutes, for runs and queue waits.
var runBuckets = prometheus.ExponentialBuckets(0.005, 4, 10)

// newMetrics registers the collectors with reg (a new registry with the Go
// runtime and process collectors when nil) and an Observer on srv.
func newMetrics(srv *graphserver.Server, reg *prometheus.Registry, logger *slog.Logger) (*metrics, error) {
	if reg == nil {
		reg = prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	m := &metrics{srv: srv, gatherer: reg}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: metricsNamespace, Name: name, Help: help}, labels)
	}
	counter1 := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Namespace: metricsNamespace, Name: name, Help: help})
	}
	histogram := func(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: metricsNamespace, Name: name, Help: help, Buckets: buckets}, labels)
	}
	histogram1 := func(name, help string, buckets []float64) prometheus.Histogram {
		return prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: metricsNamespace, Name: name, Help: help, Buckets: buckets})
	}
	gauge := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(metricsNamespace+"_"+name, help, nil, nil)
	}
	m.httpRequests = counter("http_requests_total", "HTTP requests by method, route pattern and status code.", "method", "route", "code")
	m.httpDuration = histogram("http_request_duration_seconds", "HTTP request latency by method and route pattern (a stream lasts as long as it is followed).", prometheus.DefBuckets, "method", "route")
	m.httpStreams = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: metricsNamespace, Name: "http_streams_active", Help: "Server-Sent Events responses being written."})
	m.runsCreated = counter1("runs_created_total", "Runs created.")
	m.runsStarted = counter1("runs_started_total", "Run attempts started by this process's workers.")
	m.runsEnded = counter("runs_ended_total", "Runs ended, by final status (rolled_back: deleted by a rollback).", "status")
	m.runsReleased = counter("runs_released_total", "Run attempts handed back to the queue, by reason.", "reason")
	m.runDuration = histogram("run_duration_seconds", "Running time of the run attempts that ended in this process, by final status.", runBuckets, "status")
	m.queueWait = histogram1("run_queue_wait_seconds", "Time a run waited in the queue from claimable to started (first attempts).", runBuckets)
	m.webhookDeliveries = counter("webhook_deliveries_total", "Webhook deliveries ended, by outcome (delivered, failed).", "outcome")
	m.webhookRetries = counter1("webhook_retries_total", "Webhook attempts that failed and will be retried.")
	m.webhookDuration = histogram1("webhook_attempt_duration_seconds", "Duration of webhook delivery attempts.", prometheus.DefBuckets)
	m.groupSize = histogram1("storage_write_group_size", "Writes committed per grouped storage transaction.", prometheus.ExponentialBuckets(1, 2, 8))
	m.groupDuration = histogram1("storage_write_group_duration_seconds", "Latency of grouped storage transactions, begin to commit.", prometheus.ExponentialBuckets(0.0001, 4, 10))
	m.groupWait = histogram1("storage_write_group_wait_seconds", "Time the oldest write of a grouped storage transaction waited for it to begin (queued behind the single writer).", prometheus.ExponentialBuckets(0.0001, 4, 10))
	m.groupErrors = counter1("storage_write_group_errors_total", "Grouped storage transactions that failed to commit.")
	m.queueDepth = gauge("run_queue_depth", "Pending runs a worker may claim now, in every process sharing the storage.")
	m.queueDelayed = gauge("run_queue_delayed", "Pending runs waiting for their after_seconds.")
	m.runsRunning = gauge("runs_running", "Runs claimed by a worker, in every process sharing the storage.")
	m.runsExecuting = gauge("runs_executing", "Runs executing in this process.")
	m.eventLogs = gauge("event_logs", "Runs whose events this process records for streams.")
	m.subscribers = gauge("stream_subscribers", "Consumers following runs in this process (streams, waits, joins).")

	for _, c := range []prometheus.Collector{
		m.httpRequests, m.httpDuration, m.httpStreams, m.runsCreated, m.runsStarted, m.runsEnded,
		m.runsReleased, m.runDuration, m.queueWait, m.webhookDeliveries, m.webhookRetries,
		m.webhookDuration, m.groupSize, m.groupDuration, m.groupWait, m.groupErrors, statsCollector{m},
	} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	m.handler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: promLogger{logger}, ErrorHandling: promhttp.ContinueOnError})
	srv.AddObserver(m)
	return m, nil
}

// promLogger adapts a logger to promhttp's Logger.
type promLogger struct{ l *slog.Logger }

func (p promLogger) Println(v ...any) { p.l.Error("serve metrics", "err", v) }

// Observe implements graphserver.Observer.
func (m *metrics) Observe(ev graphserver.Event) {
	switch ev := ev.(type) {
	case graphserver.RunEvent:
		switch {
		case ev.Status == graphserver.RunPending && !ev.Released:
			m.runsCreated.Inc()
		case ev.Status == graphserver.RunPending:
			m.runsReleased.WithLabelValues(ev.Reason).Inc()
		case ev.Status == graphserver.RunRunning:
			m.runsStarted.Inc()
			if ev.Attempt == 1 {
				m.queueWait.Observe(ev.Wait.Seconds())
			}
		default:
			status := cmpStatus(ev.Status)
			m.runsEnded.WithLabelValues(status).Inc()
			if ev.Attempt > 0 { // it ran here
				m.runDuration.WithLabelValues(status).Observe(ev.Duration.Seconds())
			}
		}
	case graphserver.WebhookEvent:
		m.webhookDuration.Observe(ev.Duration.Seconds())
		if ev.Outcome == graphserver.WebhookRetry {
			m.webhookRetries.Inc()
		} else {
			m.webhookDeliveries.WithLabelValues(ev.Outcome).Inc()
		}
	case graphserver.StorageWriteEvent:
		if ev.Err != nil {
			m.groupErrors.Inc()
			return
		}
		m.groupSize.Observe(float64(ev.Size))
		m.groupDuration.Observe(ev.Duration.Seconds())
		m.groupWait.Observe(ev.Wait.Seconds())
	}
}

// cmpStatus names a final run status for the runs_ended_total label.
func cmpStatus(status string) string {
	if status == "" {
		return "rolled_back"
	}
	return status
}

// observeRequest counts one served request.
func (m *metrics) observeRequest(method, route string, status int, d time.Duration) {
	if m == nil {
		return
	}
	if route == "" {
		route = "unmatched" // never the raw path: its ids would explode the label space
	}
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions:
	default:
		method = "other" // a client may send any token
	}
	m.httpRequests.WithLabelValues(method, route, strconv.Itoa(status)).Inc()
	m.httpDuration.WithLabelValues(method, route).Observe(d.Seconds())
}

// streamOpened counts an SSE response until the returned func is called.
func (m *metrics) streamOpened() (closed func()) {
	if m == nil {
		return func() {}
	}
	m.httpStreams.Inc()
	return m.httpStreams.Dec
}

// statsCollector reports Server.Stats as gauges at each scrape.
type statsCollector struct{ m *metrics }

func (c statsCollector) Describe(ch chan<- *prometheus.Desc) {
	m := c.m
	for _, d := range []*prometheus.Desc{m.queueDepth, m.queueDelayed, m.runsRunning, m.runsExecuting, m.eventLogs, m.subscribers} {
		ch <- d
	}
}

func (c statsCollector) Collect(ch chan<- prometheus.Metric) {
	m := c.m
	ctx, cancel := context.WithTimeout(context.Background(), statsTimeout)
	defer cancel()
	st, err := m.srv.Stats(ctx)
	gauge := func(d *prometheus.Desc, v int) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v))
	}
	if err != nil {
		ch <- prometheus.NewInvalidMetric(m.queueDepth, err) // logged by the handler; the rest is served
	} else if st.QueueCounted {
		gauge(m.queueDepth, st.Queue.Ready)
		gauge(m.queueDelayed, st.Queue.Delayed)
		gauge(m.runsRunning, st.Queue.Running)
	}
	gauge(m.runsExecuting, st.RunsExecuting)
	gauge(m.eventLogs, st.EventLogs)
	gauge(m.subscribers, st.Subscribers)
}

// serveMetrics handles GET /metrics: the Prometheus text exposition format.
func (h *handler) serveMetrics(w http.ResponseWriter, r *http.Request) error {
	h.metrics.handler.ServeHTTP(w, r)
	return nil
}

package graphserver

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math/rand/v2"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/graphserver/graphserver/driver"
)

// WebhookSender delivers one webhook: an HTTP POST of body with the given
// headers to url. It returns the response status, or an error when no
// response arrived (network failure, time-out). httpapi.WebhookSender is the
// net/http implementation (connect time-out 5 s, request time-out 30 s).
type WebhookSender interface {
	Send(ctx context.Context, url string, body []byte, headers map[string]string) (status int, err error)
}

// WebhookOptions configures webhook delivery. The zero value has no sender:
// runs asking for a webhook are then refused with EINVALID.
type WebhookOptions struct {
	// Sender posts deliveries. Nil disables webhooks.
	Sender WebhookSender
	// Secret, when set, signs each delivery: the SignatureHeader header holds
	// "sha256=" + hex(HMAC-SHA256(Secret, body)).
	Secret string
	// SignatureHeader names the signature header. Default
	// "X-Webhook-Signature".
	SignatureHeader string
	// Policy restricts the URLs runs may give.
	Policy WebhookPolicy
	// MaxAttempts bounds the attempts per delivery. Default 5.
	MaxAttempts int
	// Backoff is the delay before the first retry; each retry doubles it,
	// with ±50% jitter. Default 1 s.
	Backoff time.Duration
}

// WebhookPolicy restricts webhook URLs; a run whose webhook breaks it is
// refused with EINVALID (422). The zero value accepts any absolute http or
// https URL whose host is not, and does not resolve to, a loopback, private,
// link-local, unspecified or cloud metadata address.
type WebhookPolicy struct {
	// HTTPSOnly refuses http URLs.
	HTTPSOnly bool
	// AllowedHosts, when non-empty, lists the only host names allowed
	// ("example.com", or "*.example.com" for subdomains).
	AllowedHosts []string
	// AllowPrivate accepts hosts that are, or resolve to, loopback, private,
	// link-local, unspecified or cloud metadata addresses, which are refused
	// by default (server-side request forgery). Set it only when webhooks
	// target your own network, and give the sender the same setting
	// (httpapi.WebhookSenderOptions.AllowPrivate).
	AllowPrivate bool
	// MaxURLLength bounds the URL length. Default 4096.
	MaxURLLength int
}

// Webhook option defaults.
const (
	WebhookMaxAttemptsDefault = 5
	WebhookBackoffDefault     = time.Second
	// WebhookSignatureHeaderDefault is the default WebhookOptions.SignatureHeader.
	WebhookSignatureHeaderDefault = "X-Webhook-Signature"
	// WebhookMaxURLLengthDefault is the default WebhookPolicy.MaxURLLength.
	WebhookMaxURLLengthDefault = 4096
	webhookLease               = time.Minute
	webhookParallel            = 8
)

// check validates a webhook URL against the policy.
func (p WebhookPolicy) check(ctx context.Context, raw string) error {
	if len(raw) > cmp.Or(p.MaxURLLength, WebhookMaxURLLengthDefault) {
		return Errorf(EINVALID, "webhook URL is too long.")
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return Errorf(EINVALID, "webhook must be an absolute http or https URL.")
	}
	if p.HTTPSOnly && u.Scheme != "https" {
		return Errorf(EINVALID, "webhook must use https.")
	}
	host := strings.ToLower(u.Hostname())
	if len(p.AllowedHosts) > 0 && !hostAllowed(host, p.AllowedHosts) {
		return Errorf(EINVALID, "webhook host %s is not allowed.", host)
	}
	if p.AllowPrivate {
		return nil
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") || host == "metadata.google.internal" {
		return Errorf(EINVALID, "webhook host %s is not allowed.", host)
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		addrs, err = net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return Errorf(EINVALID, "webhook host %s does not resolve.", host)
		}
	}
	for _, a := range addrs {
		if !p.AllowsAddr(a) {
			return Errorf(EINVALID, "webhook host %s resolves to a private address.", host)
		}
	}
	return nil
}

// metadataAddrs are cloud metadata endpoints.
var metadataAddrs = []netip.Addr{netip.MustParseAddr("169.254.169.254"), netip.MustParseAddr("fd00:ec2::254"), netip.MustParseAddr("100.100.100.200")}

// AllowsAddr reports whether a webhook may connect to a: any address with
// AllowPrivate, else none of the loopback, private, link-local, unspecified,
// multicast or cloud metadata addresses. check applies it to the addresses
// a URL's host resolves to; senders apply it again at dial time
// (httpapi.NewWebhookSender), so that DNS cannot rebind past the policy.
func (p WebhookPolicy) AllowsAddr(a netip.Addr) bool {
	return p.AllowPrivate || !blockedWebhookAddr(a)
}

// blockedWebhookAddr reports whether a is an address webhooks may not
// target by default.
func blockedWebhookAddr(a netip.Addr) bool {
	a = a.Unmap()
	for _, m := range metadataAddrs {
		if a == m {
			return true
		}
	}
	return a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsUnspecified() || a.IsMulticast() || a.IsInterfaceLocalMulticast()
}

func hostAllowed(host string, allowed []string) bool {
	for _, h := range allowed {
		h = strings.ToLower(h)
		if h == host || (strings.HasPrefix(h, "*.") && strings.HasSuffix(host, h[1:])) {
			return true
		}
	}
	return false
}

// webhooks sends the outbox.
type webhooks struct {
	q      *runQueue
	opts   WebhookOptions
	policy webhookPolicyCheck
	wake   chan struct{}
}

// webhookPolicyCheck validates webhook URLs at run creation.
type webhookPolicyCheck struct {
	enabled bool
	policy  WebhookPolicy
}

func (c webhookPolicyCheck) check(ctx context.Context, raw string) error {
	if !c.enabled {
		return Errorf(EINVALID, "Webhooks are not enabled on this server.")
	}
	return c.policy.check(ctx, raw)
}

func newWebhooks(q *runQueue, o WebhookOptions) *webhooks {
	return &webhooks{q: q, opts: o, policy: webhookPolicyCheck{enabled: o.Sender != nil, policy: o.Policy}, wake: make(chan struct{}, 1)}
}

func (w *webhooks) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// delivery builds the outbox entry of a finished run: the run record
// with its final status, plus run_started_at, run_ended_at, values and error.
func (w *webhooks) delivery(run *Run, out *runOutcome, startedAt, endedAt time.Time, errJSON json.RawMessage) *driver.WebhookDelivery {
	status := out.status
	if out.rollback {
		status = RunInterrupted
	}
	values := json.RawMessage("null")
	if out.state != nil && out.state.Checkpoint != nil && out.state.Values != nil {
		values = marshalOutput(out.state.Values)
	} else if out.tracker != nil && out.tracker.lastValues != nil {
		values = out.tracker.lastValues
	}
	errMsg := ""
	if errJSON != nil {
		errMsg = errorMessage(out.err)
	}
	return webhookDelivery(run, status, &startedAt, endedAt, values, errMsg)
}

// webhookDelivery builds the outbox entry of a run that ended with status:
// the run record plus run_started_at (null if it never started),
// run_ended_at, values and, when errMsg is set, error.
func webhookDelivery(run *Run, status string, startedAt *time.Time, endedAt time.Time, values json.RawMessage, errMsg string) *driver.WebhookDelivery {
	r := *run
	r.Status = status
	r.UpdatedAt = endedAt
	b, err := json.Marshal(r)
	if err != nil {
		return nil
	}
	var body map[string]json.RawMessage
	if json.Unmarshal(b, &body) != nil {
		return nil
	}
	body["run_started_at"] = marshalOutput(startedAt)
	body["run_ended_at"] = marshalOutput(endedAt)
	if len(values) == 0 {
		values = json.RawMessage("null")
	}
	body["values"] = values
	if errMsg != "" {
		body["error"] = marshalOutput(errMsg)
	}
	return &driver.WebhookDelivery{ID: webhookDeliveryID(run.RunID), RunID: run.RunID, URL: *run.Kwargs.Webhook, Body: marshalOutput(body), NextAt: endedAt}
}

// endedRunWebhook returns the outbox delivery of a run that ended with
// status at endedAt without executing to its end — cancelled while pending,
// or ended by the lease sweep (a cancellation its dead worker never saw, or
// out of attempts) — or nil when the run asked for no webhook. errMsg, when
// set, is the delivery's error. Storage drivers call it to queue the
// delivery in the transaction that ends the run (see RunStorage), so that a
// crash cannot end a run and lose its webhook.
func endedRunWebhook(run *Run, status string, endedAt time.Time, errMsg string) *driver.WebhookDelivery {
	if run == nil || run.Kwargs.Webhook == nil || *run.Kwargs.Webhook == "" {
		return nil
	}
	return webhookDelivery(run, status, nil, endedAt, nil, errMsg)
}

// RunMaxAttemptsMessage is the error of a run the lease sweep ended because
// it ran out of attempts (Options.MaxAttempts): its thread's error and its
// webhook say it.
const RunMaxAttemptsMessage = "The run was interrupted too many times (its worker stopped without finishing it)."

// WebhookIDHeader is the header carrying a delivery's id. Delivery is at
// least once: a crash between sending a delivery and recording it sends it
// again, with the same id, for the receiver to de-duplicate on. The id is
// derived from the run id (a run ends, and is delivered, once).
const WebhookIDHeader = "X-Webhook-Id"

// webhookIDSpace is the UUID namespace of delivery ids.
var webhookIDSpace = uuid.MustParse("5f0b8a5e-8f7e-4b8c-9a57-6a2c1d0e4b31")

// webhookDeliveryID is the delivery id of a run's webhook.
func webhookDeliveryID(runID string) string {
	return uuid.NewSHA1(webhookIDSpace, []byte(runID)).String()
}

// loop sends due deliveries until the server drains.
func (w *webhooks) loop(ctx context.Context) {
	q := w.q
	var inflight sync.WaitGroup
	defer inflight.Wait()
	sem := make(chan struct{}, webhookParallel)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-timer.C:
		case <-w.wake:
		case <-q.drain:
			return
		case <-ctx.Done():
			return
		}
		if w.opts.Sender != nil {
			now := q.s.clock()
			ds, err := q.storage.ClaimWebhooks(ctx, now, now.Add(webhookLease), webhookParallel*4)
			if err != nil && ctx.Err() == nil {
				q.s.logger.Error("claim webhooks", "err", err)
			}
			for _, d := range ds {
				select {
				case sem <- struct{}{}:
				case <-ctx.Done():
					return
				}
				inflight.Go(func() {
					defer func() { <-sem }()
					q.s.recovered("webhook delivery", func() { w.send(ctx, d) }, "run_id", d.RunID)
				})
			}
			if len(ds) == webhookParallel*4 {
				w.signal()
			}
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(min(q.pollInterval, w.opts.Backoff))
	}
}

// send makes one attempt and records it.
func (w *webhooks) send(ctx context.Context, d *driver.WebhookDelivery) {
	q := w.q
	var body map[string]json.RawMessage
	if err := json.Unmarshal(d.Body, &body); err != nil {
		_ = q.storage.UpdateWebhook(context.WithoutCancel(ctx), d.ID, d.Attempts+1, true, time.Time{}, "bad body")
		return
	}
	body["webhook_sent_at"] = marshalOutput(q.s.clock())
	payload := marshalOutput(body)
	headers := map[string]string{"Content-Type": "application/json", WebhookIDHeader: d.ID}
	if w.opts.Secret != "" {
		mac := hmac.New(sha256.New, []byte(w.opts.Secret))
		mac.Write(payload)
		headers[w.opts.SignatureHeader] = "sha256=" + hex.EncodeToString(mac.Sum(nil))
	}
	sendCtx, cancel := context.WithTimeout(ctx, 35*time.Second)
	start := time.Now()
	status, err := w.opts.Sender.Send(sendCtx, d.URL, payload, headers)
	took := time.Since(start)
	cancel()
	attempts := d.Attempts + 1
	retry := err != nil || status == 429 || status >= 500
	lastErr := ""
	if err != nil {
		lastErr = err.Error()
	} else if status >= 300 {
		lastErr = "status " + strconv.Itoa(status)
	}
	done := !retry || attempts >= w.opts.MaxAttempts
	q.s.webhookAttempted(WebhookEvent{RunID: d.RunID, URL: d.URL, Attempt: attempts, StatusCode: status,
		Outcome: webhookOutcome(done, lastErr), Duration: took, Err: lastErr})
	delay := time.Duration(float64(w.opts.Backoff) * float64(int(1)<<min(attempts-1, 20)) * (0.5 + rand.Float64()))
	if err := q.storage.UpdateWebhook(context.WithoutCancel(ctx), d.ID, attempts, done, q.s.clock().Add(delay), lastErr); err != nil {
		q.s.logger.Error("record webhook attempt", "run_id", d.RunID, "err", err)
	}
	if !done {
		time.AfterFunc(delay, w.signal)
	}
}

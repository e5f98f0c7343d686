package httpapi

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"

	"github.com/graphserver/graphserver"
)

// WebhookSender delivers run webhooks over net/http with a 5 s connect
// time-out and a 30 s request time-out. It implements
// graphserver.WebhookSender; wire it with
// graphserver.Options{Webhooks: graphserver.WebhookOptions{Sender: httpapi.NewWebhookSender(httpapi.WebhookSenderOptions{})}}.
type WebhookSender struct {
	client *http.Client
}

var _ graphserver.WebhookSender = (*WebhookSender)(nil)

// WebhookSenderOptions configures a WebhookSender. The zero value is the
// safe default.
type WebhookSenderOptions struct {
	// AllowPrivate lets the sender connect to loopback, private, link-local,
	// unspecified and cloud metadata addresses, which it refuses by default
	// at dial time (after DNS resolution, so DNS cannot rebind past
	// graphserver.WebhookPolicy). Match graphserver.WebhookPolicy.AllowPrivate.
	AllowPrivate bool
}

// NewWebhookSender returns a sender.
func NewWebhookSender(o WebhookSenderOptions) *WebhookSender {
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	if !o.AllowPrivate {
		dialer.Control = func(network, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return err
			}
			if !(graphserver.WebhookPolicy{}).AllowsAddr(ap.Addr()) {
				return fmt.Errorf("webhook address %s is not allowed", ap.Addr())
			}
			return nil
		}
	}
	transport := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dialer.DialContext,
		TLSHandshakeTimeout:   5 * time.Second,
		ResponseHeaderTimeout: 30 * time.Second,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
	}
	return &WebhookSender{client: &http.Client{
		Transport: transport,
		Timeout:   30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}}
}

// Send POSTs body to url and returns the response status.
func (s *WebhookSender) Send(ctx context.Context, url string, body []byte, headers map[string]string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	return resp.StatusCode, nil
}

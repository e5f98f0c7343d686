package graphserver_test

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
)

// TestWebhookPolicyAllowsAddr: the addresses a webhook may not reach by
// default (server-side request forgery), and AllowPrivate lifting that.
func TestWebhookPolicyAllowsAddr(t *testing.T) {
	t.Parallel()
	for addr, allowed := range map[string]bool{
		"93.184.216.34":   true,
		"2606:4700::1111": true,
		"127.0.0.1":       false,
		"::1":             false,
		"10.1.2.3":        false,
		"192.168.0.10":    false,
		"169.254.169.254": false, // cloud metadata
		"100.100.100.200": false, // cloud metadata
		"0.0.0.0":         false,
		"::ffff:10.0.0.1": false, // mapped IPv4
		"224.0.0.1":       false,
	} {
		a := netip.MustParseAddr(addr)
		require.Equal(t, allowed, graphserver.WebhookPolicy{}.AllowsAddr(a), addr)
		require.True(t, graphserver.WebhookPolicy{AllowPrivate: true}.AllowsAddr(a), addr)
	}
}

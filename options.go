package graphserver

import (
	"cmp"
	"log/slog"
	"maps"
	"math"
	"slices"
	"strings"
	"time"
)

// withDefaults returns a copy of o with every default applied, and the maps
// and slices the Server keeps copied. It is the one place defaults live:
// the Server's parts read the result as it is.
func (o Options) withDefaults() Options {
	o.Graphs = maps.Clone(o.Graphs)
	if o.Graphs == nil {
		o.Graphs = map[string]Graph{}
	}
	o.GraphConfigs = maps.Clone(o.GraphConfigs)
	o.Logger = cmp.Or(o.Logger, slog.Default())
	if o.Now == nil {
		o.Now = time.Now
	}
	o.StoreIndexFields = slices.Clone(o.StoreIndexFields)
	if o.StoreIndexFields == nil {
		o.StoreIndexFields = []string{storeIndexWholeValue}
	}
	o.StoreSweepInterval = cmp.Or(o.StoreSweepInterval, StoreSweepIntervalDefault)
	o.OptimizeInterval = cmp.Or(o.OptimizeInterval, OptimizeIntervalDefault)
	o.CronInterval = cmp.Or(o.CronInterval, CronIntervalDefault)
	o.Workers = cmp.Or(o.Workers, WorkersDefault)
	o.LeaseDuration = cmp.Or(o.LeaseDuration, LeaseDurationDefault)
	o.MaxAttempts = cmp.Or(o.MaxAttempts, MaxAttemptsDefault)
	o.MaxRunTime = cmp.Or(o.MaxRunTime, MaxRunTimeDefault)
	o.ResumableStreamTTL = cmp.Or(o.ResumableStreamTTL, ResumableStreamTTLDefault)
	o.PollInterval = cmp.Or(o.PollInterval, PollIntervalDefault)
	o.DefaultMultitaskStrategy = cmp.Or(o.DefaultMultitaskStrategy, MultitaskEnqueue)
	o.CancelGrace = cmp.Or(o.CancelGrace, CancelGraceDefault)
	o.MaxEventLogBytes = cmp.Or(o.MaxEventLogBytes, MaxEventLogBytesDefault)
	w := &o.Webhooks
	w.SignatureHeader = cmp.Or(w.SignatureHeader, WebhookSignatureHeaderDefault)
	w.MaxAttempts = cmp.Or(w.MaxAttempts, WebhookMaxAttemptsDefault)
	w.Backoff = cmp.Or(w.Backoff, WebhookBackoffDefault)
	w.Policy.MaxURLLength = cmp.Or(w.Policy.MaxURLLength, WebhookMaxURLLengthDefault)
	w.Policy.AllowedHosts = slices.Clone(w.Policy.AllowedHosts)
	return o
}

// validate names the first bad option of o, which has its defaults applied
// (withDefaults): every value left is either a documented special value or
// in range. It returns EINVALID.
func (o Options) validate() error {
	if o.Storage == nil {
		return Errorf(EINVALID, "Options.Storage is required.")
	}
	for id, g := range o.Graphs {
		if id == "" || g == nil {
			return Errorf(EINVALID, "Options.Graphs: graph ids must be non-empty and graphs non-nil.")
		}
	}
	positive := []struct {
		name string
		d    time.Duration
	}{
		{"StoreSweepInterval", o.StoreSweepInterval},
		{"LeaseDuration", o.LeaseDuration},
		{"MaxRunTime", o.MaxRunTime},
		{"ResumableStreamTTL", o.ResumableStreamTTL},
		{"PollInterval", o.PollInterval},
		{"CancelGrace", o.CancelGrace},
		{"Webhooks.Backoff", o.Webhooks.Backoff},
	}
	for _, p := range positive {
		if p.d < 0 {
			return Errorf(EINVALID, "Options.%s must be 0 (the default) or a positive duration, not %s.", p.name, p.d)
		}
	}
	switch {
	case o.StoreDefaultTTL < 0:
		return Errorf(EINVALID, "Options.StoreDefaultTTL must be 0 (no expiry) or a positive duration, not %s.", o.StoreDefaultTTL)
	case o.StoreDefaultTTL > MaxTTL:
		return Errorf(EINVALID, "Options.StoreDefaultTTL must be at most %s.", MaxTTL)
	case o.MaxEventLogBytes < -1:
		return Errorf(EINVALID, "Options.MaxEventLogBytes must be 0 (the default), -1 (no limit) or a positive size, not %d.", o.MaxEventLogBytes)
	case o.Workers < 0:
		return Errorf(EINVALID, "Options.Workers must be 0 (the default) or more, not %d.", o.Workers)
	case o.MaxAttempts < 0:
		return Errorf(EINVALID, "Options.MaxAttempts must be 0 (the default) or more, not %d.", o.MaxAttempts)
	case !slices.Contains(multitaskStrategies, o.DefaultMultitaskStrategy):
		return Errorf(EINVALID, "Options.DefaultMultitaskStrategy must be reject, interrupt, rollback or enqueue, not %q.", o.DefaultMultitaskStrategy)
	case o.Webhooks.MaxAttempts < 0:
		return Errorf(EINVALID, "Options.Webhooks.MaxAttempts must be 0 (the default) or more, not %d.", o.Webhooks.MaxAttempts)
	case o.Webhooks.Policy.MaxURLLength < 0:
		return Errorf(EINVALID, "Options.Webhooks.Policy.MaxURLLength must be 0 (the default) or more, not %d.", o.Webhooks.Policy.MaxURLLength)
	case !validHeaderName(o.Webhooks.SignatureHeader):
		return Errorf(EINVALID, "Options.Webhooks.SignatureHeader %q is not a valid HTTP header name.", o.Webhooks.SignatureHeader)
	}
	return nil
}

// MaxTTL bounds every time-to-live a client or an option gives (threads,
// store items): one hundred years. A longer one is refused with EINVALID
// rather than overflowing time arithmetic into the past.
const MaxTTL = 100 * 365 * 24 * time.Hour

// maxTTLMinutes is MaxTTL in minutes, the unit of the API's ttl fields.
var maxTTLMinutes = MaxTTL.Minutes()

// checkTTLMinutes checks a ttl given in minutes: a positive finite number
// no larger than MaxTTL. field names it in the message.
func checkTTLMinutes(field string, minutes float64) error {
	if !(minutes > 0) || math.IsInf(minutes, 0) || minutes > maxTTLMinutes {
		return Errorf(EINVALID, "%s must be a positive number of minutes, at most %.0f (100 years), not %v", field, maxTTLMinutes, minutes)
	}
	return nil
}

// validHeaderName reports whether s is an HTTP header field name (an RFC
// 9110 token).
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

package storagetest

import (
	"context"
	"testing"
	"time"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
)

// Rules are the Server's multi-row run rules (package graphserver, file
// runtx.go), which run over a driver's Storage.WithTx and Tx. The rules are
// unexported: only graphserver's own tests can hand them over (its
// export_test.go), so the run areas of the suite run in full from
// graphserver's tests (storage_test.go, RunWithRules) and skip their
// rule-dependent subtests when a driver's own test calls Run.
type Rules struct {
	CreateRun        func(ctx context.Context, st driver.Storage, r *graphserver.Run, opts *driver.RunInsert) (*driver.RunCreated, error)
	CancelRuns       func(ctx context.Context, st driver.Storage, sel *graphserver.RunCancelSelect, action string, now time.Time, filter graphserver.Filter) ([]driver.CancelledRun, error)
	FinishRun        func(ctx context.Context, st driver.Storage, f *driver.RunFinish) error
	SweepRuns        func(ctx context.Context, st driver.Storage, now time.Time, maxAttempts int) ([]driver.SweptRun, error)
	SetThreadSummary func(ctx context.Context, st driver.Storage, id string, s *driver.ThreadSummary, now time.Time) error
}

// ruleStorage is a Storage with the rules as methods, named as the driver
// methods they replaced so that the suite reads as before.
type ruleStorage struct {
	driver.Storage
	rules *Rules     // nil: rule-dependent subtests skip (needRules)
	t     testing.TB // the test or benchmark that opened the storage
}

// rulesOf returns the rules of a storage the suite opened; its Storage
// field is the driver's own value (for its optional capabilities).
func rulesOf(st driver.Storage) *ruleStorage { return st.(*ruleStorage) }

// skip skips the test when the suite runs without the rules. Call it only
// from the test's goroutine (needRules first in tests calling rules from
// other goroutines).
func (s *ruleStorage) skip() {
	s.t.Helper()
	if s.rules == nil {
		s.t.Skip("needs graphserver's run rules: runs from graphserver's tests (storagetest.RunWithRules)")
	}
}

// needRules skips t when the suite runs without the rules.
func needRules(t testing.TB, st driver.Storage) *ruleStorage {
	t.Helper()
	rs := rulesOf(st)
	if rs.rules == nil {
		t.Skip("needs graphserver's run rules: runs from graphserver's tests (storagetest.RunWithRules)")
	}
	return rs
}

func (s *ruleStorage) CreateRun(ctx context.Context, r *graphserver.Run, opts *driver.RunInsert) (*driver.RunCreated, error) {
	s.skip()
	return s.rules.CreateRun(ctx, s.Storage, r, opts)
}

func (s *ruleStorage) CancelRuns(ctx context.Context, sel *graphserver.RunCancelSelect, action string, now time.Time, filter graphserver.Filter) ([]driver.CancelledRun, error) {
	s.skip()
	return s.rules.CancelRuns(ctx, s.Storage, sel, action, now, filter)
}

func (s *ruleStorage) FinishRun(ctx context.Context, f *driver.RunFinish) error {
	s.skip()
	return s.rules.FinishRun(ctx, s.Storage, f)
}

func (s *ruleStorage) SweepRuns(ctx context.Context, now time.Time, maxAttempts int) ([]driver.SweptRun, error) {
	s.skip()
	return s.rules.SweepRuns(ctx, s.Storage, now, maxAttempts)
}

func (s *ruleStorage) SetThreadSummary(ctx context.Context, id string, sum *driver.ThreadSummary, now time.Time) error {
	s.skip()
	return s.rules.SetThreadSummary(ctx, s.Storage, id, sum, now)
}

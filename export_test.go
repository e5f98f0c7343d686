package graphserver

// The Server's run rules (runtx.go), for storagetest.RunWithRules in
// storage_test.go: the driver suite exercises them against each driver.
var (
	InsertRunForTest        = insertRun
	CancelRunsForTest       = cancelRuns
	FinishRunForTest        = finishRun
	SweepExpiredForTest     = sweepExpired
	SetThreadSummaryForTest = setThreadSummary
)

package driver

import (
	"encoding/json"

	"github.com/graphserver/graphserver/record"
)

// ThreadSummary is what a finished run or a state update writes onto its
// thread: the latest checkpoint's values, interrupts and the derived status.
type ThreadSummary struct {
	Status     string
	Values     json.RawMessage
	Interrupts map[string][]record.Interrupt
	Error      json.RawMessage
}

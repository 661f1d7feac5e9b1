package composition

import (
	"time"

	"github.com/ecoPrimals/primalscope/history"
)

func historyEntry(endpoint, target, method string, d time.Duration, ok bool) history.Entry {
	e := history.Entry{Time: time.Now(), Duration: d, Target: target, Endpoint: endpoint, Method: method, Outcome: history.OutcomeOK}
	if !ok {
		e.Outcome = history.OutcomeError
	}
	return e
}

package composition

import "github.com/ecoPrimals/primalscope/history"

// FromHistory is a recorded call as an observed call from the user's node
// (YouID) to the target it reached: by endpoint, else by the name given.
func FromHistory(e history.Entry) Call {
	c := Call{At: e.Time, From: YouID, To: e.Endpoint, Method: e.Method, Latency: e.Duration,
		Failed: e.Outcome != history.OutcomeOK}
	if c.To == "" {
		c.To = e.Target
	} else if e.Target != "" {
		c.Alt = []string{e.Target}
	}
	return c
}

package discovery

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/ecoPrimals/primalscope/discovery/capability"
	"github.com/ecoPrimals/primalscope/ipc"
)

// Description is what one target says about itself: health, identity and
// capabilities, with the method that answered each and how long it took.
type Description struct {
	Health        *capability.Health       `json:"health,omitempty"`
	HealthLatency time.Duration            `json:"health_latency_ns,omitempty"`
	Identity      *capability.Identity     `json:"identity,omitempty"`
	Capabilities  *capability.Capabilities `json:"capabilities,omitempty"`
	CapsMethod    string                   `json:"capabilities_method,omitempty"`
	Tree          []capability.Domain      `json:"tree,omitempty"`
	// Errors lists what failed, by step ("health", "identity", "capabilities").
	Errors map[string]string `json:"errors,omitempty"`
}

// Describe asks a connected target for health.liveness, identity.get (falling
// back to identity) and capabilities.list (falling back to capability.list).
// Each step is bounded by ctx; a step that fails is recorded in Errors and the
// others still run, except that a transport failure or a BTSP demand ends the
// description and is returned.
func Describe(ctx context.Context, c *ipc.Conn) (*Description, error) {
	return DescribePool(ctx, c, "")
}

// DescribePool is Describe for a stdio Bus pool: every call carries pool
// (a bus drops a message without one). An empty pool is Describe.
func DescribePool(ctx context.Context, c *ipc.Conn, pool string) (*Description, error) {
	d := &Description{Errors: map[string]string{}}
	fatal := func(err error) bool {
		var ce *ipc.ClosedError
		var be *ipc.BTSPRequiredError
		var te *ipc.TimeoutError
		return errors.As(err, &ce) || errors.As(err, &be) || errors.As(err, &te) || ctx.Err() != nil
	}

	resp, err := c.Send(ctx, ipc.Request{Method: "health.liveness", Pool: pool})
	switch {
	case err == nil:
		h := capability.ParseLiveness(resp.Result)
		d.Health = &h
		d.HealthLatency = resp.Elapsed
	case fatal(err):
		return d, err
	default:
		d.Errors["health"] = err.Error()
	}

	res, method, err := callFallback(ctx, c, pool, capability.MethodIdentityGet, capability.MethodIdentity)
	switch {
	case err == nil:
		id, perr := capability.ParseIdentity(res)
		if perr != nil {
			d.Errors["identity"] = perr.Error()
		} else {
			id.Method = method
			d.Identity = id
		}
	case fatal(err):
		return d, err
	default:
		d.Errors["identity"] = err.Error()
	}

	res, method, err = callFallback(ctx, c, pool, "capabilities.list", "capability.list")
	switch {
	case err == nil:
		caps, perr := capability.Parse(res)
		if perr != nil {
			d.Errors["capabilities"] = perr.Error()
		} else {
			d.Capabilities = caps
			d.CapsMethod = method
			d.Tree = caps.Tree()
		}
	case fatal(err):
		return d, err
	default:
		d.Errors["capabilities"] = err.Error()
	}
	if len(d.Errors) == 0 {
		d.Errors = nil
	}
	return d, nil
}

// callFallback calls first, and second when the peer says first is not a method.
func callFallback(ctx context.Context, c *ipc.Conn, pool, first, second string) (json.RawMessage, string, error) {
	resp, err := c.Send(ctx, ipc.Request{Method: first, Pool: pool})
	if err == nil {
		return resp.Result, first, nil
	}
	var re *ipc.RPCError
	if !errors.As(err, &re) || (re.Code != -32601 && re.Code != 12) {
		return nil, first, err
	}
	resp, err2 := c.Send(ctx, ipc.Request{Method: second, Pool: pool})
	if err2 != nil {
		return nil, second, err
	}
	return resp.Result, second, nil
}

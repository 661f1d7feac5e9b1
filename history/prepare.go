// Making an entry ready to store: redacted, cut and counted, in one pass.

package history

import (
	"encoding/json"
	"strconv"
	"time"
)

// row is an Entry ready for the database: redacted, cut, counted.
type row struct {
	e       Entry
	errText string // for the full-text index
	bytes   int64
}

// Placeholders stored when a value cannot be checked for secrets.
const (
	unparsedParams = `"[not stored: params were not valid JSON]"`
	unparsedValue  = `"[not stored: not valid JSON]"`
)

// prepare redacts, cuts and counts e. It never fails: what cannot be checked
// for secrets is replaced by a placeholder.
func (s *Store) prepare(e Entry) row { return prepareEntry(e, s.opts) }

// prepareEntry makes e ready to store, in one pass over what is stored:
//
//  1. The params (small, typed by the user) are redacted whole: every value
//     under a secret-looking key becomes "[redacted]" and is remembered, as
//     are the known secrets (opts.Secrets, the family seed); then they are
//     cut to the entry limit.
//  2. The result and the error data are cut to the entry limit first
//     (without copying), then only the kept part is redacted: secret keys,
//     and every remembered value wherever it appears.
//  3. The error message, which peers often make by echoing the params, gets
//     the same treatment as text; so do the target, endpoint, method,
//     session and pool.
//
// A large answer is thus read once and copied at most once (only when a
// secret is found in it). The full-text index and exports are built from
// what prepareEntry returns, so they hold no secret either.
func prepareEntry(e Entry, opts Options) row {
	opts = opts.withDefaults()
	limit := opts.EntryLimit
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	if e.Outcome == "" {
		e.Outcome = OutcomeOK
		if e.Error != nil {
			e.Outcome = OutcomeError
		}
	}
	if e.ResponseSize == 0 {
		e.ResponseSize = int64(len(e.Result))
		if e.Error != nil {
			e.ResponseSize += int64(len(e.Error.Data))
		}
	}
	var vals []string
	for _, sec := range opts.Secrets {
		if len(sec) >= MinSecretLen {
			vals = append(vals, sec)
		}
	}
	var params []byte
	if len(e.Params) > 0 {
		if !json.Valid(e.Params) {
			params = []byte(unparsedParams)
		} else {
			params = redactScan(e.Params, nil, false, &vals)
		}
	}
	sc := newScrubber(vals)
	if len(params) > 0 {
		params = redactScan(params, sc.in(params), false, nil)
		e.Params, e.ParamsTruncated = cutView(params, limit)
	}
	var cut bool
	if len(e.Result) > 0 {
		e.Result, cut = cutRedact(e.Result, limit, sc, false)
		e.Truncated = e.Truncated || cut
	}
	if e.Error != nil {
		er := *e.Error
		m, _ := cutRedact([]byte(er.Message), limit, sc, true)
		er.Message = string(m)
		if len(er.Data) > 0 {
			er.Data, cut = cutRedact(er.Data, limit, sc, false)
			e.Truncated = e.Truncated || cut
		}
		e.Error = &er
	}
	for _, f := range []*string{&e.Target, &e.Endpoint, &e.Method, &e.Session, &e.Pool, &e.Family} {
		*f = sc.scrubText(*f)
	}
	return countRow(e)
}

// cutRedact cuts v to limit (without copying) and redacts only the kept
// part, as text when text is set; cut reports whether v was cut. A secret
// the cut would split is cut off whole, so no first bytes of it are kept.
func cutRedact(v []byte, limit int, sc *scrubber, text bool) (out []byte, cut bool) {
	kept, cut := cutView(v, limit)
	if cut {
		kept = kept[:sc.cutBefore(v, len(kept)):len(kept)]
	}
	return redactScan(kept, sc.in(kept), text, nil), cut
}

// countRow fills in the full-text error text and the size counted for
// retention of an entry already prepared.
func countRow(e Entry) row {
	r := row{e: e}
	if e.Error != nil {
		r.errText = e.Error.Message
		if e.Error.Code != 0 {
			r.errText = strconv.FormatInt(e.Error.Code, 10) + " " + r.errText
		}
		if len(e.Error.Data) > 0 {
			r.errText += " " + string(e.Error.Data)
		}
	}
	r.bytes = 64 + int64(len(e.Target)+len(e.Endpoint)+len(e.Wire)+len(e.Transport)+len(e.Method)+
		len(e.Params)+len(e.Result)+len(e.Session)+len(e.Pool)+len(e.Source)+len(e.Family)) + int64(len(r.errText))
	return r
}

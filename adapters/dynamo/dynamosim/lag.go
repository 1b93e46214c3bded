package dynamosim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// The read-lag model (Options.Lag; off when 0).
//
// On AWS a write is acknowledged once it is durably stored; a global
// secondary index is updated asynchronously after that (usually within a
// second, AWS says, with no bound), and an
// eventually consistent read of the table may be served by a replica that
// has not applied it yet. Dynalite updates its indexes inside the write and
// has one copy of every item, so a read right after a write always sees
// it. With Lag set the proxy makes every read that AWS does not promise to
// be fresh see the data as it was Lag ago:
//
//   - a Query or Scan of a global secondary index (which cannot be read
//     consistently: dynalite refuses ConsistentRead there, as AWS does);
//   - a Query, Scan or GetItem of a table without ConsistentRead.
//
// A ConsistentRead of a table sees every acknowledged write, as on AWS.
//
// How: before forwarding a write (PutItem, UpdateItem, DeleteItem, every
// request of a BatchWriteItem) the proxy reads the items it will change
// from dynalite (BatchGetItem, consistent; the read the accounting needs
// too, proxy.go's write) and, once dynalite has
// acknowledged the write, records per item key "changed at t, was this
// before" (absent for a new item). A lagged read is forwarded as usual;
// then every item of its answer whose key changed less than Lag ago is
// replaced by the image it had Lag ago (the image before the oldest such
// change), projected as the read asked, or dropped when the item did not
// exist then (or, on an index, was indexed under other keys). A Select
// COUNT is asked of dynalite as a read of the items and counted after
// that, so a count lags the same way. Lag is measured from the moment
// dynalite acknowledged the write to the moment the read's answer comes
// back, so a test that reads within Lag of a write's return is certain to
// miss it, and one that polls sees it at the earliest Lag after the write.
//
// Not modelled: an item deleted, or moved to other index keys, less than
// Lag ago is not brought back into a read's answer (the adapters delete
// nothing and never change an index key); a replaced image is not checked
// against the read's FilterExpression; Lag is one fixed delay, where AWS's
// lag varies and is usually much shorter, and a table's replicas are not
// told apart (two eventually consistent reads may see different states on
// AWS, here they see the same one); BatchGetItem and TransactGetItems are
// not lagged.

// lagModel is the history of recent writes, per item.
type lagModel struct {
	lag time.Duration

	mu      sync.Mutex
	changes map[itemRef][]change
	records int // writes recorded since the last sweep
}

// itemRef names an item: its table and its primary key (keyString).
type itemRef struct{ table, key string }

// change is one acknowledged write of an item: when, and the item before
// it (nil: it did not exist).
type change struct {
	at     time.Time
	before attrs
}

// sweepEvery is how many writes are recorded between two sweeps of the
// changes that have become visible.
const sweepEvery = 1024

func newLagModel(lag time.Duration) *lagModel {
	return &lagModel{lag: lag, changes: map[itemRef][]change{}}
}

// record notes that the items were written at now, each having been
// before[ref] (nil: absent) until then.
func (m *lagModel) record(now time.Time, refs []itemRef, before map[itemRef]attrs) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, ref := range refs {
		m.changes[ref] = append(m.pending(ref, now), change{at: now, before: before[ref]})
	}
	m.records += len(refs)
	if m.records >= sweepEvery {
		m.records = 0
		for ref := range m.changes {
			if len(m.pending(ref, now)) == 0 {
				delete(m.changes, ref)
			}
		}
	}
}

// pending drops the ref's changes older than the lag (visible to every
// read now) and returns the others. Called with m.mu held.
func (m *lagModel) pending(ref itemRef, now time.Time) []change {
	cs := slices.DeleteFunc(m.changes[ref], func(c change) bool { return now.Sub(c.at) >= m.lag })
	m.changes[ref] = cs
	return cs
}

// seen returns what a read at now sees of the item: lagging reports
// whether it changed less than the lag ago, and then before is its image
// as of the lag ago (nil: it did not exist).
func (m *lagModel) seen(ref itemRef, now time.Time) (before attrs, lagging bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cs := m.pending(ref, now)
	if len(cs) == 0 {
		return nil, false
	}
	// Concurrent writers may record out of order: the oldest change.
	oldest := slices.MinFunc(cs, func(a, b change) int { return a.at.Compare(b.at) })
	return oldest.before, true
}

// lagged reports whether the read is one the lag model delays.
func lagged(op string, req *request) bool {
	switch op {
	case "Query", "Scan":
		return req.IndexName != "" || !req.ConsistentRead
	case "GetItem":
		return !req.ConsistentRead
	}
	return false
}

// capture is a ResponseWriter that keeps the answer, so the proxy can look
// at it (or change it) before the client sees it.
type capture struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func newCapture() *capture { return &capture{header: http.Header{}} }

func (c *capture) Header() http.Header { return c.header }
func (c *capture) WriteHeader(status int) {
	if c.status == 0 {
		c.status = status
	}
}

func (c *capture) Write(b []byte) (int, error) {
	c.WriteHeader(http.StatusOK)
	return c.body.Write(b)
}

// copyTo sends the kept answer on as it is.
func (c *capture) copyTo(w http.ResponseWriter) {
	for k, vs := range c.header {
		w.Header()[k] = vs
	}
	w.WriteHeader(c.status)
	_, _ = w.Write(c.body.Bytes())
}

// lagWrite forwards a write (through the accounting) and records the
// items it changed with their images from before it (keys and before, as
// the proxy's write read them).
func (p *Proxy) lagWrite(w http.ResponseWriter, r *http.Request, op string, req *request, body []byte, keys map[string][]attrs, before map[itemRef]attrs) {
	rec := newCapture()
	p.account(rec, r, op, req, body, before)
	if rec.status == http.StatusOK {
		var refs []itemRef
		left := unprocessedRefs(p, r, rec.body.Bytes())
		for table, ks := range keys {
			s := p.schema(r.Context(), table)
			for _, k := range ks {
				ref := itemRef{table, keyString(s.keys, k)}
				if !left[ref] {
					refs = append(refs, ref)
				}
			}
		}
		p.lag.record(time.Now(), refs, before)
	}
	rec.copyTo(w)
}

// writtenKeys lists, by table, the primary keys of the items a write
// request changes (if it succeeds).
func (p *Proxy) writtenKeys(r *http.Request, op string, req *request) map[string][]attrs {
	out := map[string][]attrs{}
	add := func(table string, it attrs) {
		s := p.schema(r.Context(), table)
		if s == nil {
			return
		}
		k := attrs{}
		for _, n := range s.keys.names() {
			if it[n] == nil {
				return // invalid: dynalite refuses the write
			}
			k[n] = it[n]
		}
		out[table] = append(out[table], k)
	}
	switch op {
	case "PutItem":
		add(req.TableName, req.Item)
	case "UpdateItem", "DeleteItem":
		add(req.TableName, req.Key)
	case "BatchWriteItem":
		for table, raw := range req.RequestItems {
			var wrs []writeRequest
			_ = json.Unmarshal(raw, &wrs)
			for _, wr := range wrs {
				switch {
				case wr.PutRequest != nil:
					add(table, wr.PutRequest.Item)
				case wr.DeleteRequest != nil:
					add(table, wr.DeleteRequest.Key)
				}
			}
		}
	}
	return out
}

// unprocessedRefs are the items a BatchWriteItem answer hands back
// unwritten (throttled by the model).
func unprocessedRefs(p *Proxy, r *http.Request, resp []byte) map[itemRef]bool {
	var out struct{ UnprocessedItems map[string][]writeRequest }
	_ = json.Unmarshal(resp, &out)
	left := map[itemRef]bool{}
	for table, wrs := range out.UnprocessedItems {
		s := p.schema(r.Context(), table)
		if s == nil {
			continue
		}
		for _, wr := range wrs {
			switch {
			case wr.PutRequest != nil:
				left[itemRef{table, keyString(s.keys, wr.PutRequest.Item)}] = true
			case wr.DeleteRequest != nil:
				left[itemRef{table, keyString(s.keys, wr.DeleteRequest.Key)}] = true
			}
		}
	}
	return left
}

// getItems reads the items of keys from dynalite as they are now
// (BatchGetItem, consistent, 100 keys a request), by reference; an item
// that does not exist is absent from the answer.
func (p *Proxy) getItems(r *http.Request, keys map[string][]attrs) (map[itemRef]attrs, error) {
	out := map[itemRef]attrs{}
	for table, ks := range keys {
		s := p.schema(r.Context(), table)
		seen := map[string]bool{}
		var unique []attrs
		for _, k := range ks {
			if id := keyString(s.keys, k); !seen[id] {
				seen[id] = true
				unique = append(unique, k)
			}
		}
		for chunk := range slices.Chunk(unique, 100) {
			body, _ := json.Marshal(map[string]any{"RequestItems": map[string]any{
				table: map[string]any{"Keys": chunk, "ConsistentRead": true},
			}})
			get := r.Clone(r.Context())
			get.Header = r.Header.Clone()
			get.Header.Set("X-Amz-Target", "DynamoDB_20120810.BatchGetItem")
			status, resp, _, err := p.forward(get, body)
			if err != nil {
				return nil, err
			}
			var got struct {
				Responses       map[string][]attrs
				UnprocessedKeys map[string]json.RawMessage
			}
			if status != http.StatusOK || json.Unmarshal(resp, &got) != nil || len(got.UnprocessedKeys) > 0 {
				return nil, fmt.Errorf("lag model: read the items before a write of %s: %d %s", table, status, resp)
			}
			for _, it := range got.Responses[table] {
				out[itemRef{table, keyString(s.keys, it)}] = it
			}
		}
	}
	return out, nil
}

// lagRead forwards a read (through the accounting) and rewinds its answer
// to what was there Lag ago.
func (p *Proxy) lagRead(w http.ResponseWriter, r *http.Request, op string, req *request, body []byte) {
	s := p.schema(r.Context(), req.TableName)
	var ix *index
	if s != nil && req.IndexName != "" {
		ix = s.index(req.IndexName)
	}
	if s == nil || (req.IndexName != "" && ix == nil) {
		p.account(w, r, op, req, body, nil) // dynalite answers the error
		return
	}
	clientNames := projectionNames(req.ProjectionExpression, req.ExpressionAttributeNames)
	countOnly := req.Select == "COUNT"
	fwd := body
	if op != "GetItem" && (countOnly || clientNames != nil) {
		// The answer must carry the items' keys to be rewound: ask for
		// the items rather than their count, and for the keys besides the
		// attributes projected.
		need := s.keys.names()
		if ix != nil {
			need = append(need, ix.keys.names()...)
		}
		fwd = withKeys(body, need, countOnly)
	}
	rec := newCapture()
	p.account(rec, r, op, req, fwd, nil)
	if rec.status != http.StatusOK {
		rec.copyTo(w)
		return
	}
	var out map[string]json.RawMessage
	if json.Unmarshal(rec.body.Bytes(), &out) != nil {
		rec.copyTo(w)
		return
	}
	// What the client sees of an item: its projection, or the index's.
	keep := func(name string) bool { return true }
	switch {
	case clientNames != nil:
		keep = func(name string) bool { return clientNames[name] }
	case ix != nil && ix.projection != "ALL":
		names := append(append(s.keys.names(), ix.keys.names()...), ix.include...)
		keep = func(name string) bool { return slices.Contains(names, name) }
	}
	project := func(it attrs) attrs {
		sub := attrs{}
		for n, v := range it {
			if keep(n) {
				sub[n] = v
			}
		}
		return sub
	}
	now := time.Now()
	rewind := func(it attrs) attrs {
		before, lagging := p.lag.seen(itemRef{req.TableName, keyString(s.keys, it)}, now)
		switch {
		case !lagging:
			return project(it)
		case before == nil:
			return nil
		case ix != nil && !sameValues(ix.keys.names(), before, it):
			return nil // not under these index keys then
		}
		return project(before)
	}
	if op == "GetItem" {
		var it attrs
		if json.Unmarshal(out["Item"], &it) == nil && it != nil {
			// The item's key is the request's, whatever it projects.
			full := attrs{}
			for n, v := range it {
				full[n] = v
			}
			for n, v := range req.Key {
				full[n] = v
			}
			if got := rewind(full); got == nil {
				delete(out, "Item")
			} else {
				out["Item"], _ = json.Marshal(got)
			}
		}
	} else {
		var items []attrs
		_ = json.Unmarshal(out["Items"], &items)
		kept := []attrs{}
		for _, it := range items {
			if got := rewind(it); got != nil {
				kept = append(kept, got)
			}
		}
		out["Count"], _ = json.Marshal(len(kept))
		if countOnly {
			delete(out, "Items")
		} else {
			out["Items"], _ = json.Marshal(kept)
		}
	}
	resp, _ := json.Marshal(out)
	copyHeaders(w, rec.header)
	writeJSON(w, http.StatusOK, resp)
}

// sameValues reports whether a and b both have the named attributes, with
// the same values.
func sameValues(names []string, a, b attrs) bool {
	for _, n := range names {
		_, inA := a[n]
		_, inB := b[n]
		if !inA || !inB || valueString(a[n]) != valueString(b[n]) {
			return false
		}
	}
	return true
}

// projectionNames are the top-level attributes a ProjectionExpression
// names ("a.b" and "a[0]" project part of a); nil when there is none.
func projectionNames(expr string, names map[string]string) map[string]bool {
	if strings.TrimSpace(expr) == "" {
		return nil
	}
	out := map[string]bool{}
	for _, path := range strings.Split(expr, ",") {
		top := strings.TrimSpace(path)
		if i := strings.IndexAny(top, ".["); i >= 0 {
			top = top[:i]
		}
		out[resolve(top, names)] = true
	}
	return out
}

// withKeys rewrites a Query or Scan so that its answer holds the items
// with their keys (keyNames: the table's, and the index's when it reads
// one): a Select COUNT becomes a read of the items, and a
// ProjectionExpression names the key attributes too.
func withKeys(body []byte, keyNames []string, countOnly bool) []byte {
	var raw map[string]json.RawMessage
	if json.Unmarshal(body, &raw) != nil {
		return body
	}
	if countOnly {
		delete(raw, "Select")
	}
	var proj string
	if json.Unmarshal(raw["ProjectionExpression"], &proj) == nil && proj != "" {
		names := map[string]string{}
		_ = json.Unmarshal(raw["ExpressionAttributeNames"], &names)
		projected := projectionNames(proj, names)
		for i, n := range keyNames {
			if projected[n] {
				continue // named twice, the paths would overlap: refused
			}
			projected[n] = true
			ph := fmt.Sprintf("#lagkey%d", i)
			names[ph] = n
			proj += ", " + ph
		}
		raw["ProjectionExpression"], _ = json.Marshal(proj)
		raw["ExpressionAttributeNames"], _ = json.Marshal(names)
	}
	out, _ := json.Marshal(raw)
	return out
}

package dynamosim

import (
	"encoding/json"
	"math"
	"net/http"
	"slices"
	"sort"
	"time"

	"golang.org/x/time/rate"
)

// The partition-throughput model and the per-key accounting.
//
// Every partition key value of a table and of each global secondary index
// is a partition here (AWS may put several values on one partition, never
// split one value's items over several for writes: so a value is the unit
// that cannot scale). Each has a token bucket of Options.WriteUnits write
// units and Options.ReadUnits read units a second, with one second of
// burst. A request is admitted when every partition it writes (or reads)
// has units left: a write costs one unit per KB of the item, charged to
// the table's partition, and per KB of the projected entry to each index
// partition the item is (or is newly) indexed under. Past that, a single
// request is answered ProvisionedThroughputExceededException, and a
// BatchWriteItem hands the throttled requests back in UnprocessedItems
// (the whole call is refused only when all of them are throttled).
//
// An UpdateItem's size is known only once dynalite has applied it: it is
// admitted on one unit and charged what dynalite reports consumed (the
// larger of the old and new item, as AWS bills). Its index write is
// charged when the update sets an index key to a value the item did not
// already have (AWS writes no index entry when the indexed attributes do
// not change).

// PartitionKey names one partition key value of a table or an index.
type PartitionKey struct {
	Table string
	Index string // "" for the table itself
	Key   string // the partition key value
}

// PartitionUsage is what one partition key value took so far.
type PartitionUsage struct {
	PartitionKey
	WriteUnits, ReadUnits float64
	Writes                int64 // write requests (items) that landed on it
	Throttled             int64 // requests (or batch items) refused for it
}

type partition struct {
	write, read *rate.Limiter
	usage       PartitionUsage
}

func (p *Proxy) part(k PartitionKey) *partition {
	pt, ok := p.parts[k]
	if !ok {
		pt = &partition{
			// One second of units as burst (at least one request's worth).
			write: rate.NewLimiter(rate.Limit(p.opts.WriteUnits), max(1, int(p.opts.WriteUnits))),
			read:  rate.NewLimiter(rate.Limit(p.opts.ReadUnits), max(1, int(p.opts.ReadUnits))),
			usage: PartitionUsage{PartitionKey: k},
		}
		p.parts[k] = pt
	}
	return pt
}

// Partitions returns the usage of every partition key value seen, the
// most written first.
func (p *Proxy) Partitions() []PartitionUsage {
	p.mu.Lock()
	out := make([]PartitionUsage, 0, len(p.parts))
	for _, pt := range p.parts {
		out = append(out, pt.usage)
	}
	p.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].WriteUnits > out[j].WriteUnits })
	return out
}

// Throttled is the number of requests (batch items count one each) the
// throughput model refused so far.
func (p *Proxy) Throttled() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	var n int64
	for _, pt := range p.parts {
		n += pt.usage.Throttled
	}
	return n
}

// charge is a write of units to one partition.
type charge struct {
	key   PartitionKey
	units float64
}

func unitsOf(bytes int) float64 { return math.Max(1, math.Ceil(float64(bytes)/1024)) }

// putCharges are the writes of putting it: the table's partition, and
// each index whose keys the item has.
func putCharges(table string, s *tableSchema, it attrs) []charge {
	cs := []charge{{PartitionKey{table, "", valueString(it[s.keys.hash])}, unitsOf(itemSize(it))}}
	for _, ix := range s.indexes {
		if !hasAll(it, ix.keys.names()) {
			continue // a sparse index: the item is not in it
		}
		cs = append(cs, charge{PartitionKey{table, ix.name, valueString(it[ix.keys.hash])}, unitsOf(projectedSize(s, ix, it))})
	}
	return cs
}

func hasAll(it attrs, names []string) bool {
	for _, n := range names {
		if _, ok := it[n]; !ok {
			return false
		}
	}
	return true
}

func projectedSize(s *tableSchema, ix index, it attrs) int {
	if ix.projection == "ALL" {
		return itemSize(it)
	}
	keep := append(append(s.keys.names(), ix.keys.names()...), ix.include...)
	sub := attrs{}
	for _, n := range keep {
		if v, ok := it[n]; ok {
			sub[n] = v
		}
	}
	return itemSize(sub)
}

// admit reports whether every partition has the units; when it does, it
// charges them. Called with p.mu held.
func (p *Proxy) admit(cs []charge, now time.Time) (ok bool, index bool) {
	if p.opts.Throughput {
		for _, c := range cs {
			if p.part(c.key).write.TokensAt(now) < c.units {
				// Counted once, on the partition that refused it.
				p.part(c.key).usage.Throttled++
				return false, c.key.Index != ""
			}
		}
	}
	for _, c := range cs {
		p.chargeWrite(c, now)
	}
	return true, false
}

func (p *Proxy) chargeWrite(c charge, now time.Time) {
	pt := p.part(c.key)
	pt.usage.WriteUnits += c.units
	pt.usage.Writes++
	if p.opts.Throughput {
		pt.write.ReserveN(now, int(math.Ceil(c.units)))
	}
}

// refused reports whether a partition of keys is out of write (or read)
// units, counts the throttle on it and answers the client. Called without
// p.mu.
func (p *Proxy) refused(w http.ResponseWriter, keys []PartitionKey, read bool, now time.Time) bool {
	if !p.opts.Throughput {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, k := range keys {
		lim := p.part(k).write
		if read {
			lim = p.part(k).read
		}
		if lim.TokensAt(now) < 1 {
			p.part(k).usage.Throttled++
			throttle(w, k.Index != "")
			return true
		}
	}
	return false
}

// forwardAsking forwards the request with the fields in set overridden
// (what the model needs to know from dynalite's answer) and decodes what
// it consumed.
func (p *Proxy) forwardAsking(r *http.Request, body []byte, set map[string]string) (int, []byte, http.Header, consumed, error) {
	var raw map[string]json.RawMessage
	_ = json.Unmarshal(body, &raw)
	for k, v := range set {
		raw[k], _ = json.Marshal(v)
	}
	fwd, _ := json.Marshal(raw)
	status, resp, hdr, err := p.forward(r, fwd)
	var out consumed
	if err == nil {
		_ = json.Unmarshal(resp, &out)
	}
	return status, resp, hdr, out, err
}

// hide removes from a successful answer the fields the client did not ask
// for.
func hide(status int, resp []byte, fields ...string) []byte {
	if status != http.StatusOK || len(fields) == 0 {
		return resp
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(resp, &m) != nil {
		return resp
	}
	for _, f := range fields {
		delete(m, f)
	}
	out, _ := json.Marshal(m)
	return out
}

func throttle(w http.ResponseWriter, index bool) {
	if index {
		refuse(w, typeThroughput, msgIndexThrottled)
		return
	}
	refuse(w, typeThroughput, msgTableThrottled)
}

// account applies the throughput model and the accounting to one request
// the strictness layer let through, and forwards it.
func (p *Proxy) account(w http.ResponseWriter, r *http.Request, op string, req *request, body []byte) {
	switch op {
	case "PutItem":
		s := p.schema(r.Context(), req.TableName)
		if s == nil {
			break
		}
		p.mu.Lock()
		ok, ix := p.admit(putCharges(req.TableName, s, req.Item), time.Now())
		p.mu.Unlock()
		if !ok {
			throttle(w, ix)
			return
		}
	case "DeleteItem":
		s := p.schema(r.Context(), req.TableName)
		if s == nil {
			break
		}
		p.mu.Lock()
		ok, ix := p.admit([]charge{{PartitionKey{req.TableName, "", valueString(req.Key[s.keys.hash])}, 1}}, time.Now())
		p.mu.Unlock()
		if !ok {
			throttle(w, ix)
			return
		}
	case "BatchWriteItem":
		p.batchWrite(w, r, req, body)
		return
	case "UpdateItem":
		p.update(w, r, req, body)
		return
	case "Query", "GetItem":
		p.read(w, r, op, req, body)
		return
	}
	p.pass(w, r, body)
}

// batchWrite admits each request of the batch on its own; the throttled
// ones go back in UnprocessedItems, next to what dynalite left.
func (p *Proxy) batchWrite(w http.ResponseWriter, r *http.Request, req *request, body []byte) {
	kept := map[string][]json.RawMessage{}
	unprocessed := map[string][]json.RawMessage{}
	anyIndex := false
	now := time.Now()
	for table, raw := range req.RequestItems {
		var wrs []json.RawMessage
		if json.Unmarshal(raw, &wrs) != nil {
			p.pass(w, r, body)
			return
		}
		s := p.schema(r.Context(), table)
		for _, wr := range wrs {
			var one writeRequest
			if s == nil || json.Unmarshal(wr, &one) != nil {
				kept[table] = append(kept[table], wr)
				continue
			}
			var cs []charge
			if one.PutRequest != nil {
				cs = putCharges(table, s, one.PutRequest.Item)
			} else if one.DeleteRequest != nil {
				cs = []charge{{PartitionKey{table, "", valueString(one.DeleteRequest.Key[s.keys.hash])}, 1}}
			}
			p.mu.Lock()
			ok, ix := p.admit(cs, now)
			p.mu.Unlock()
			if ok {
				kept[table] = append(kept[table], wr)
			} else {
				unprocessed[table] = append(unprocessed[table], wr)
				anyIndex = anyIndex || ix
			}
		}
	}
	if len(unprocessed) == 0 {
		p.pass(w, r, body)
		return
	}
	if len(kept) == 0 {
		throttle(w, anyIndex)
		return
	}
	var raw map[string]json.RawMessage
	_ = json.Unmarshal(body, &raw)
	raw["RequestItems"], _ = json.Marshal(kept)
	fwd, _ := json.Marshal(raw)
	status, resp, hdr, err := p.forward(r, fwd)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	if status == http.StatusOK {
		var out map[string]json.RawMessage
		if json.Unmarshal(resp, &out) == nil {
			var left map[string][]json.RawMessage
			_ = json.Unmarshal(out["UnprocessedItems"], &left)
			if left == nil {
				left = map[string][]json.RawMessage{}
			}
			for t, wrs := range unprocessed {
				left[t] = append(left[t], wrs...)
			}
			out["UnprocessedItems"], _ = json.Marshal(left)
			resp, _ = json.Marshal(out)
		}
	}
	copyHeaders(w, hdr)
	writeJSON(w, status, resp)
}

// consumed is the part of a response the model reads.
type consumed struct {
	ConsumedCapacity *struct{ CapacityUnits float64 }
	Attributes       attrs
}

// update admits an UpdateItem on one unit of its table partition (and a
// unit left on each index partition it may write), then charges what it
// consumed. It asks dynalite for the capacity and the old values it needs
// and hides from the client what the client did not ask for.
func (p *Proxy) update(w http.ResponseWriter, r *http.Request, req *request, body []byte) {
	s := p.schema(r.Context(), req.TableName)
	if s == nil {
		p.pass(w, r, body)
		return
	}
	tableKey := PartitionKey{req.TableName, "", valueString(req.Key[s.keys.hash])}
	// Index entries the update may write: those whose keys it sets.
	assigned := assignments(req.UpdateExpression, req.ExpressionAttributeNames, req.ExpressionAttributeValues)
	type ixWrite struct {
		ix  index
		key PartitionKey
	}
	var ixs []ixWrite
	for _, ix := range s.indexes {
		hv, ok := assigned[ix.keys.hash]
		if !ok {
			continue
		}
		ixs = append(ixs, ixWrite{ix, PartitionKey{req.TableName, ix.name, valueString(hv)}})
	}
	now := time.Now()
	check := []PartitionKey{tableKey}
	for _, x := range ixs {
		check = append(check, x.key)
	}
	if p.refused(w, check, false, now) {
		return
	}
	askedCapacity := req.ReturnConsumedCapacity == "TOTAL" || req.ReturnConsumedCapacity == "INDEXES"
	askedOld := req.ReturnValues == "UPDATED_OLD"
	canCompare := askedOld || req.ReturnValues == "" || req.ReturnValues == "NONE"
	set, hidden := map[string]string{}, []string{}
	if !askedCapacity {
		set["ReturnConsumedCapacity"] = "TOTAL"
		hidden = append(hidden, "ConsumedCapacity")
	}
	if canCompare && !askedOld && len(ixs) > 0 {
		set["ReturnValues"] = "UPDATED_OLD"
		hidden = append(hidden, "Attributes")
	}
	status, resp, hdr, out, err := p.forwardAsking(r, body, set)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	units := 1.0 // a failed condition is billed too, and dynalite reports nothing then
	if out.ConsumedCapacity != nil && out.ConsumedCapacity.CapacityUnits > 0 {
		units = out.ConsumedCapacity.CapacityUnits
	}
	cs := []charge{{tableKey, units}}
	if status == http.StatusOK {
		for _, x := range ixs {
			changed := slices.ContainsFunc(x.ix.keys.names(), func(n string) bool {
				return valueString(out.Attributes[n]) != valueString(assigned[n])
			})
			if changed || !canCompare {
				cs = append(cs, charge{x.key, 1})
			}
		}
	}
	p.mu.Lock()
	for _, c := range cs {
		p.chargeWrite(c, now)
	}
	p.mu.Unlock()
	copyHeaders(w, hdr)
	writeJSON(w, status, hide(status, resp, hidden...))
}

// read admits a Query or GetItem when its partition has read units left
// and charges what dynalite reports it consumed.
func (p *Proxy) read(w http.ResponseWriter, r *http.Request, op string, req *request, body []byte) {
	s := p.schema(r.Context(), req.TableName)
	if s == nil {
		p.pass(w, r, body)
		return
	}
	key := PartitionKey{Table: req.TableName, Index: req.IndexName}
	hash := s.keys.hash
	if req.IndexName != "" {
		if ix := s.index(req.IndexName); ix != nil {
			hash = ix.keys.hash
		}
	}
	if op == "GetItem" {
		key.Key = valueString(req.Key[hash])
	} else if vs := keyConditionValues(req)[hash]; len(vs) > 0 {
		key.Key = valueString(vs[0])
	}
	now := time.Now()
	if p.refused(w, []PartitionKey{key}, true, now) {
		return
	}
	set, hidden := map[string]string{}, []string{}
	if req.ReturnConsumedCapacity != "TOTAL" && req.ReturnConsumedCapacity != "INDEXES" {
		set["ReturnConsumedCapacity"] = "TOTAL"
		hidden = append(hidden, "ConsumedCapacity")
	}
	status, resp, hdr, out, err := p.forwardAsking(r, body, set)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	if status == http.StatusOK && out.ConsumedCapacity != nil {
		// AWS bills every read request at least one 4 KB read, whatever it
		// finds (0.5 units eventually consistent, 1 strongly); dynalite
		// reports 0 for a Query that matches nothing.
		least := 0.5
		if req.ConsistentRead {
			least = 1
		}
		if out.ConsumedCapacity.CapacityUnits < least {
			out.ConsumedCapacity.CapacityUnits = least
			resp = withReadUnits(resp, least)
		}
	}
	if out.ConsumedCapacity != nil {
		p.mu.Lock()
		pt := p.part(key)
		pt.usage.ReadUnits += out.ConsumedCapacity.CapacityUnits
		if p.opts.Throughput {
			pt.read.ReserveN(now, int(math.Ceil(out.ConsumedCapacity.CapacityUnits)))
		}
		p.mu.Unlock()
	}
	copyHeaders(w, hdr)
	writeJSON(w, status, hide(status, resp, hidden...))
}

// withReadUnits sets the read units a response reports consumed (the
// total, and the table's or index's part when it names one), for a read
// that dynalite billed below AWS's minimum.
func withReadUnits(resp []byte, units float64) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(resp, &m) != nil {
		return resp
	}
	var cc map[string]json.RawMessage
	if json.Unmarshal(m["ConsumedCapacity"], &cc) != nil {
		return resp
	}
	u, _ := json.Marshal(units)
	cc["CapacityUnits"] = u
	if _, ok := cc["ReadCapacityUnits"]; ok {
		cc["ReadCapacityUnits"] = u
	}
	for _, part := range []string{"Table"} {
		if raw, ok := cc[part]; ok {
			var pm map[string]json.RawMessage
			if json.Unmarshal(raw, &pm) == nil {
				pm["CapacityUnits"] = u
				if _, ok := pm["ReadCapacityUnits"]; ok {
					pm["ReadCapacityUnits"] = u
				}
				cc[part], _ = json.Marshal(pm)
			}
		}
	}
	m["ConsumedCapacity"], _ = json.Marshal(cc)
	out, err := json.Marshal(m)
	if err != nil {
		return resp
	}
	return out
}

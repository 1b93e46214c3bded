package dynamosim

import (
	"encoding/json"
	"math"
	"net/http"
	"reflect"
	"sort"
	"strings"
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
// has units left: a write costs the units it is billed (below), each on
// the partition key value of the table or index it writes. Past that, a single
// request is answered ProvisionedThroughputExceededException, and a
// BatchWriteItem hands the throttled requests back in UnprocessedItems
// (the whole call is refused only when all of them are throttled).
//
// A write is billed as AWS bills it (the "unit rules"; docs/dynamodb.md):
//
//   - on the table, one unit per KB of the larger of the item before and
//     after the write (at least 1): an overwrite costs the larger of the
//     old and new item, a delete the item deleted;
//   - a write refused by its ConditionExpression still costs the units of
//     the item as it is (at least 1), on the table only;
//   - on each global secondary index, per AWS's rules for index writes: an
//     item entering the index (put, or its index keys set) costs one write
//     of the new entry, one leaving it (deleted, or an index key removed)
//     one write of the old entry, a change of an index key value two (the
//     old entry deleted, the new one put, each on its own partition key
//     value), a change of a projected attribute alone one (the larger
//     entry), and a write that changes nothing the index projects costs
//     the index nothing.
//
// To know the item before a write the proxy reads it from dynalite
// (consistently, before forwarding the write; the read itself is not
// billed), and holds a lock on the item's key from that read until the
// write is answered (itemLocks), so that concurrent writes through this
// proxy are billed on the image each really replaced. An UpdateItem's new
// image is asked of dynalite (ReturnValues ALL_NEW, hidden from a client
// that did not ask for it) or, when the client asked for other values,
// read again under the same lock. Approximate: writes to the same dynalite
// that do not pass through this proxy are not serialised with it, and the
// throughput model admits a request on the units of its success, so a
// write refused by its condition is billed the failure's units but has
// taken the success's from its partitions' token buckets.

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

// writeCharges are the units of changing an item from old to new (nil:
// absent) on the table's partition and on each index's.
func writeCharges(table string, s *tableSchema, old, new attrs) []charge {
	key := new
	if key == nil {
		key = old
	}
	units := max(sizeUnits(old), sizeUnits(new), 1)
	cs := []charge{{PartitionKey{table, "", valueString(key[s.keys.hash])}, units}}
	return append(cs, indexCharges(table, s, old, new)...)
}

// conditionFailedCharges are the units of a write refused by its
// condition: the item as it is (at least 1), on the table only.
func conditionFailedCharges(table string, s *tableSchema, old attrs, key attrs) []charge {
	return []charge{{PartitionKey{table, "", valueString(key[s.keys.hash])}, max(sizeUnits(old), 1)}}
}

// sizeUnits is 0 for an absent item, else its write units.
func sizeUnits(it attrs) float64 {
	if it == nil {
		return 0
	}
	return unitsOf(itemSize(it))
}

// indexCharges are the index writes of changing an item from old to new
// (nil: absent), by AWS's rules for global secondary indexes.
func indexCharges(table string, s *tableSchema, old, new attrs) []charge {
	var cs []charge
	for _, ix := range s.indexes {
		names := ix.keys.names()
		wasIn := old != nil && hasAll(old, names)
		isIn := new != nil && hasAll(new, names)
		var oldEntry, newEntry charge
		if wasIn {
			oldEntry = charge{PartitionKey{table, ix.name, valueString(old[ix.keys.hash])}, unitsOf(projectedSize(s, ix, old))}
		}
		if isIn {
			newEntry = charge{PartitionKey{table, ix.name, valueString(new[ix.keys.hash])}, unitsOf(projectedSize(s, ix, new))}
		}
		switch {
		case wasIn && isIn && !sameValues(names, old, new):
			cs = append(cs, oldEntry, newEntry) // delete the old entry, put the new
		case wasIn && isIn:
			if !reflect.DeepEqual(projected(s, ix, old), projected(s, ix, new)) {
				newEntry.units = max(oldEntry.units, newEntry.units)
				cs = append(cs, newEntry)
			}
		case wasIn:
			cs = append(cs, oldEntry)
		case isIn:
			cs = append(cs, newEntry)
		}
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
	return itemSize(projected(s, ix, it))
}

// projected is the index entry of an item: all of it, or the table's and
// the index's keys and the attributes the index includes.
func projected(s *tableSchema, ix index, it attrs) attrs {
	if ix.projection == "ALL" {
		return it
	}
	keep := append(append(s.keys.names(), ix.keys.names()...), ix.include...)
	sub := attrs{}
	for _, n := range keep {
		if v, ok := it[n]; ok {
			sub[n] = v
		}
	}
	return sub
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

// rebill replaces the units admitted for a write by those it was billed
// once answered (a refused condition, or an error that bills nothing).
// Only the accounting changes: the token buckets keep what admit took.
func (p *Proxy) rebill(admitted, billed []charge) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range admitted {
		pt := p.part(c.key)
		pt.usage.WriteUnits -= c.units
		pt.usage.Writes--
	}
	for _, c := range billed {
		pt := p.part(c.key)
		pt.usage.WriteUnits += c.units
		pt.usage.Writes++
	}
}

// writeRefused tells a write's answer that bills nothing (an error other
// than a refused condition) and one refused by its condition.
func writeRefused(status int, resp []byte) (refused, conditionFailed bool) {
	if status == http.StatusOK {
		return false, false
	}
	var e awsError
	_ = json.Unmarshal(resp, &e)
	if strings.HasSuffix(e.Type, "ConditionalCheckFailedException") {
		return false, true
	}
	return true, false
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

// forwardAsking forwards the request and decodes what it consumed. With
// ask set it first sets field to value in the request (something the
// model needs from dynalite's answer that the client did not ask for) and
// returns answerField in hidden: the answer's field the client must not
// see. A request that cannot be forwarded is answered 502 here and ok is
// false.
func (p *Proxy) forwardAsking(w http.ResponseWriter, r *http.Request, body []byte, ask bool, field, value, answerField string) (status int, resp []byte, hdr http.Header, out consumed, hidden []string, ok bool) {
	fwd := body
	if ask {
		var raw map[string]json.RawMessage
		_ = json.Unmarshal(body, &raw)
		raw[field], _ = json.Marshal(value)
		fwd, _ = json.Marshal(raw)
		hidden = []string{answerField}
	}
	status, resp, hdr, err := p.forward(r, fwd)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return 0, nil, nil, out, nil, false
	}
	_ = json.Unmarshal(resp, &out)
	return status, resp, hdr, out, hidden, true
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
// the strictness layer let through, and forwards it. before holds the
// items a write changes as they were before it (absent: no item).
func (p *Proxy) account(w http.ResponseWriter, r *http.Request, op string, req *request, body []byte, before map[itemRef]attrs) {
	switch op {
	case "PutItem", "DeleteItem":
		s := p.schema(r.Context(), req.TableName)
		if s == nil {
			break
		}
		key, new := req.Key, attrs(nil)
		if op == "PutItem" {
			key, new = req.Item, req.Item
		}
		old := before[itemRef{req.TableName, keyString(s.keys, key)}]
		cs := writeCharges(req.TableName, s, old, new)
		p.mu.Lock()
		ok, ix := p.admit(cs, time.Now())
		p.mu.Unlock()
		if !ok {
			throttle(w, ix)
			return
		}
		status, resp, hdr, err := p.forward(r, body)
		if err != nil {
			p.rebill(cs, nil)
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		switch refused, failed := writeRefused(status, resp); {
		case failed:
			p.rebill(cs, conditionFailedCharges(req.TableName, s, old, key))
		case refused:
			p.rebill(cs, nil)
		}
		copyHeaders(w, hdr)
		writeJSON(w, status, resp)
		return
	case "BatchWriteItem":
		p.batchWrite(w, r, req, body, before)
		return
	case "UpdateItem":
		p.update(w, r, req, body, before)
		return
	case "Query", "GetItem":
		p.read(w, r, op, req, body)
		return
	}
	p.pass(w, r, body)
}

// batchWrite admits each request of the batch on its own; the throttled
// ones go back in UnprocessedItems, next to what dynalite left.
func (p *Proxy) batchWrite(w http.ResponseWriter, r *http.Request, req *request, body []byte, before map[itemRef]attrs) {
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
				it := one.PutRequest.Item
				cs = writeCharges(table, s, before[itemRef{table, keyString(s.keys, it)}], it)
			} else if one.DeleteRequest != nil {
				cs = writeCharges(table, s, before[itemRef{table, keyString(s.keys, one.DeleteRequest.Key)}], nil)
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

// update admits an UpdateItem when its table partition, and each index
// partition it may write, have a unit left, forwards it asking dynalite
// for the new item (hidden from a client that did not ask for it), and
// charges what it cost: writeCharges from the item before to the item
// after, or the item as it is when the condition refused it.
func (p *Proxy) update(w http.ResponseWriter, r *http.Request, req *request, body []byte, before map[itemRef]attrs) {
	s := p.schema(r.Context(), req.TableName)
	if s == nil {
		p.pass(w, r, body)
		return
	}
	ref := itemRef{req.TableName, keyString(s.keys, req.Key)}
	old := before[ref]
	// The partitions it may write: the table's, the index entries the item
	// has, and those whose keys the update sets.
	check := []PartitionKey{{req.TableName, "", valueString(req.Key[s.keys.hash])}}
	assigned := assignments(req.UpdateExpression, req.ExpressionAttributeNames, req.ExpressionAttributeValues)
	for _, ix := range s.indexes {
		if old != nil && hasAll(old, ix.keys.names()) {
			check = append(check, PartitionKey{req.TableName, ix.name, valueString(old[ix.keys.hash])})
		}
		if hv, ok := assigned[ix.keys.hash]; ok {
			check = append(check, PartitionKey{req.TableName, ix.name, valueString(hv)})
		}
	}
	now := time.Now()
	if p.refused(w, check, false, now) {
		return
	}
	askNew := req.ReturnValues == "" || req.ReturnValues == "NONE"
	status, resp, hdr, out, hidden, ok := p.forwardAsking(w, r, body, askNew, "ReturnValues", "ALL_NEW", "Attributes")
	if !ok {
		return
	}
	var cs []charge
	switch refused, failed := writeRefused(status, resp); {
	case failed:
		cs = conditionFailedCharges(req.TableName, s, old, req.Key)
	case !refused:
		new := out.Attributes
		if !askNew && req.ReturnValues != "ALL_NEW" {
			// The client asked for other values: the item is read again,
			// still under its lock, so no other write came in between.
			after, err := p.getItems(r, map[string][]attrs{req.TableName: {req.Key}})
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			new = after[ref]
		}
		cs = writeCharges(req.TableName, s, old, new)
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
	askUnits := req.ReturnConsumedCapacity != "TOTAL" && req.ReturnConsumedCapacity != "INDEXES"
	status, resp, hdr, out, hidden, ok := p.forwardAsking(w, r, body, askUnits, "ReturnConsumedCapacity", "TOTAL", "ConsumedCapacity")
	if !ok {
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

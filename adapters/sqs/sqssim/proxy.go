package sqssim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/skidata/skidata/adapters/standin"
)

// Proxy sits between an SQS client and fauxqs and answers as Amazon SQS
// does where fauxqs would not (docs/sqs.md, "The local stand-in"):
//
//   - a visibility timeout ends when it ends: ChangeMessageVisibility of a
//     message whose timeout has passed is refused (MessageNotInflight),
//     where fauxqs, which returns expired messages to the queue lazily,
//     would still extend it; and no message stays invisible more than 12
//     hours after it was received;
//   - a queue has at most Options.InFlightLimit messages in flight
//     (received, neither deleted nor visible again): beyond it a long poll
//     returns nothing and a short poll is refused with OverLimit, as SQS
//     does at its in-flight quota;
//   - a redrive policy must name a dead-letter queue that exists, with a
//     maxReceiveCount of 1 to 1,000;
//   - a message carries at most 10 attributes;
//   - a long poll answers with no message only once its wait has ended,
//     where fauxqs answers every waiting receive but one empty at once
//     when a message comes;
//
// and it injects, on demand, what SQS does and fauxqs never does: whole
// requests refused (Refuse, the next n of an operation; RefuseShare, a
// share of every request for a while: throttling, internal errors),
// failed entries of a batch request (FailEntries), and messages delivered
// twice (Duplicate). It counts every request
// it answers by operation (Answered), so a test can hold a client's own
// request counters to what reached "SQS".
//
// It speaks SQS's JSON protocol: the operation is in the X-Amz-Target
// header (AmazonSQS.<Operation>), the request a JSON body.
type Proxy struct {
	// URL is what clients use as their endpoint.
	URL string

	upstream string
	opts     Options
	srv      *http.Server
	httpc    *http.Client

	mu          sync.Mutex
	refusals    map[string][]APIError   // by operation, next first
	entryFaults map[string][]EntryError // by operation, next first
	answered    map[string]int          // requests answered, by operation
	handles     map[string]*handle      // receipt handles handed out
	refuseShare float64                 // RefuseShare's share of requests refused
	refuseWith  APIError                // and its error
	dupShare    float64                 // Duplicate's share of received messages
	copies      map[string][]copyOf     // by queue URL: copies to deliver, next first
	ghosts      map[string]bool         // receipt handles of the copies delivered
	ghostSeq    int
}

// copyOf is a received message as SQS would deliver it again: the same
// message, id and body, under a receipt handle of its own.
type copyOf map[string]json.RawMessage

// Options tunes a Proxy.
type Options struct {
	// InFlightLimit is the most messages of one queue that may be in
	// flight at once; 0 means SQS's own quota for a standard queue,
	// InFlightQuota.
	InFlightLimit int
	// Observe, when set, is given every request the proxy takes (refused
	// ones included) as it arrives: the operation and the JSON body, which
	// names the queue (QueueUrl, or QueueName for GetQueueUrl and
	// CreateQueue). It is how a test records which calls a client makes
	// on which queue. It is called from concurrent requests.
	Observe func(op string, body []byte)
}

// InFlightQuota is SQS's quota of in-flight messages of a standard queue:
// "approximately 120,000"
// (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/quotas-queues.html).
const InFlightQuota = 120_000

// maxVisibility is how long a message may stay invisible after it was
// received, extensions included: 12 hours
// (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_ChangeMessageVisibility.html).
const maxVisibility = 12 * time.Hour

// handle is one receipt handle the proxy handed out.
type handle struct {
	queue    string    // the queue URL
	received time.Time // when the message was received with this handle
	deadline time.Time // when it becomes visible again
}

// APIError is an error SQS answers a whole request with.
type APIError struct {
	Status  int
	Code    string
	Message string
}

// The errors Refuse is given in the tests.
var (
	// Throttled is SQS refusing a request over its rate; the SDK retries
	// it with backoff.
	Throttled = APIError{http.StatusBadRequest, "RequestThrottled", "Rate exceeded"}
	// InternalError is SQS failing a request on its side.
	InternalError = APIError{http.StatusInternalServerError, "InternalError", "We encountered an internal error. Please try again."}
)

// EntryError fails one entry of a batch request (its HTTP answer is 200).
type EntryError struct {
	Code        string
	Message     string
	SenderFault bool
}

// EntryInternalError is an entry SQS failed on its side.
var EntryInternalError = EntryError{Code: "InternalError", Message: "We encountered an internal error. Please try again."}

// StartProxy listens on a free loopback port and forwards to upstream.
func StartProxy(upstream string, opts Options) (*Proxy, error) {
	if opts.InFlightLimit <= 0 {
		opts.InFlightLimit = InFlightQuota
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("sqs strict proxy: listen: %w", err)
	}
	p := &Proxy{
		URL:      "http://" + ln.Addr().String(),
		upstream: strings.TrimSuffix(upstream, "/"),
		opts:     opts,
		httpc: &http.Client{Transport: &http.Transport{
			MaxIdleConns: 256, MaxIdleConnsPerHost: 256, IdleConnTimeout: 90 * time.Second,
		}},
		refusals:    map[string][]APIError{},
		entryFaults: map[string][]EntryError{},
		answered:    map[string]int{},
		handles:     map[string]*handle{},
		copies:      map[string][]copyOf{},
		ghosts:      map[string]bool{},
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// Close stops the proxy.
func (p *Proxy) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = p.srv.Shutdown(ctx)
}

// Refuse answers the next n requests of operation op (e.g. "SendMessage")
// with e instead of forwarding them.
func (p *Proxy) Refuse(op string, n int, e APIError) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for range n {
		p.refusals[op] = append(p.refusals[op], e)
	}
}

// FailEntries fails the next n entries of batch operation op (e.g.
// "DeleteMessageBatch"), in the order they arrive, with e: they are not
// forwarded, and the answer lists them as Failed beside the others'.
func (p *Proxy) FailEntries(op string, n int, e EntryError) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for range n {
		p.entryFaults[op] = append(p.entryFaults[op], e)
	}
}

// RefuseShare answers each request, whatever its operation, with e with
// probability share (0 to 1), until it is called again with share 0: SQS
// throttling an account, or failing on its side, for a while (Refuse
// counts the next n requests of one operation instead).
func (p *Proxy) RefuseShare(share float64, e APIError) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refuseShare, p.refuseWith = share, e
}

// Duplicate makes each message received from now on, with probability
// share (0 to 1), be delivered a second time by a later receive of its
// queue, until it is called again with share 0: a standard queue's "at
// least once" (a copy of the message on a server that was unavailable
// when it was received or deleted comes back, SQS's developer guide
// says). The copy has the message's id and body and a receipt handle of
// its own, which deletes and visibility changes accept and the proxy
// answers itself; copies owed when share returns to 0 are still
// delivered.
func (p *Proxy) Duplicate(share float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dupShare = share
}

// Copies is how many copies Duplicate owes that no receive has
// delivered yet.
func (p *Proxy) Copies() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, q := range p.copies {
		n += len(q)
	}
	return n
}

// EmptyReceives is the key of Answered that counts the ReceiveMessage
// requests answered with no message; CopiesMade the copies of received
// messages Duplicate has made.
const (
	EmptyReceives = "ReceiveMessage (empty)"
	CopiesMade    = "ReceiveMessage (copies made)"
)

// Answered is how many requests of each operation the proxy has taken
// (counted as they arrive), refused ones included, under EmptyReceives
// how many receives it answered with no message, and under CopiesMade
// how many copies Duplicate has made.
func (p *Proxy) Answered() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.answered)
}

// ServeHTTP counts, checks and forwards one request.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	op, ok := strings.CutPrefix(r.Header.Get("X-Amz-Target"), "AmazonSQS.")
	if !ok || r.Method != http.MethodPost {
		p.pass(w, r, body) // not ours to judge: fauxqs answers
		return
	}
	if p.opts.Observe != nil {
		p.opts.Observe(op, body)
	}
	p.mu.Lock()
	p.answered[op]++
	var refusal *APIError
	if q := p.refusals[op]; len(q) > 0 {
		refusal, p.refusals[op] = &q[0], q[1:]
	} else if p.refuseShare > 0 && rand.Float64() < p.refuseShare {
		e := p.refuseWith
		refusal = &e
	}
	p.mu.Unlock()
	if refusal != nil {
		writeError(w, *refusal)
		return
	}
	switch op {
	case "ReceiveMessage":
		p.receive(w, r, body)
	case "DeleteMessage":
		p.deleteOne(w, r, body)
	case "ChangeMessageVisibility":
		p.changeVisibility(w, r, body)
	case "DeleteMessageBatch":
		p.batch(w, r, op, body, nil, p.forget)
	case "ChangeMessageVisibilityBatch":
		p.batch(w, r, op, body, p.checkVisibility, p.extend)
	case "SendMessage":
		p.checkAttributes(w, r, body)
	case "SendMessageBatch":
		p.batch(w, r, op, body, checkEntryAttributes, nil)
	case "CreateQueue", "SetQueueAttributes":
		p.checkRedrive(w, r, body)
	default:
		p.pass(w, r, body)
	}
}

// receive forwards a ReceiveMessage within the in-flight limit and records
// the receipt handles it hands out.
func (p *Proxy) receive(w http.ResponseWriter, r *http.Request, body []byte) {
	var req struct {
		QueueUrl            string
		MaxNumberOfMessages *int
		WaitTimeSeconds     *int
		VisibilityTimeout   *int
	}
	if json.Unmarshal(body, &req) != nil {
		p.pass(w, r, body)
		return
	}
	want := 1
	if req.MaxNumberOfMessages != nil {
		want = *req.MaxNumberOfMessages
	}
	if resp := p.takeCopies(req.QueueUrl, want); resp != nil {
		writeJSON(w, http.StatusOK, resp)
		return
	}
	wait := time.Duration(0)
	if req.WaitTimeSeconds != nil {
		wait = time.Duration(*req.WaitTimeSeconds) * time.Second
	}
	end := time.Now().Add(wait)
	var (
		status int
		resp   []byte
		hdr    http.Header
	)
	for {
		room := p.opts.InFlightLimit - p.inFlight(req.QueueUrl)
		if room <= 0 {
			if wait == 0 {
				writeError(w, APIError{http.StatusBadRequest, "OverLimit", "Too many messages in flight: the queue is at its in-flight limit"})
				return
			}
			// A long poll at the quota finds nothing to receive: it waits, and
			// answers with no messages and no error.
			select {
			case <-time.After(time.Until(end)):
			case <-r.Context().Done():
			}
			p.countEmpty()
			writeJSON(w, http.StatusOK, []byte("{}"))
			return
		}
		fwd := body
		if want > room {
			fwd = withField(fwd, "MaxNumberOfMessages", room)
		}
		left := time.Until(end)
		if wait > 0 {
			fwd = withField(fwd, "WaitTimeSeconds", int((left+time.Second-1)/time.Second))
		}
		var err error
		status, resp, hdr, err = p.forward(r, fwd)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		// fauxqs wakes every waiting long poll when a message comes, and
		// those that lose it to another answer empty at once; SQS answers
		// a long poll with no message only once its wait has ended
		// (ReceiveMessage's WaitTimeSeconds), so it waits on. A receive
		// that names no wait (the queue's own) is forwarded once.
		if status != http.StatusOK || wait == 0 || received(resp) > 0 || time.Until(end) <= 0 || r.Context().Err() != nil {
			break
		}
	}
	if status == http.StatusOK {
		var out struct {
			Messages []struct{ ReceiptHandle string }
		}
		if json.Unmarshal(resp, &out) == nil && len(out.Messages) == 0 {
			p.countEmpty()
		}
		if len(out.Messages) > 0 {
			vis, err := p.visibilityOf(r.Context(), req.QueueUrl, req.VisibilityTimeout)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			now := time.Now()
			p.mu.Lock()
			for _, m := range out.Messages {
				p.handles[m.ReceiptHandle] = &handle{queue: req.QueueUrl, received: now, deadline: now.Add(vis)}
			}
			p.mu.Unlock()
			p.copyReceived(req.QueueUrl, resp)
		}
	}
	copyHeaders(w, hdr)
	writeJSON(w, status, resp)
}

// received is how many messages a ReceiveMessage answer holds.
func received(resp []byte) int {
	var out struct{ Messages []json.RawMessage }
	_ = json.Unmarshal(resp, &out)
	return len(out.Messages)
}

func (p *Proxy) countEmpty() {
	p.mu.Lock()
	p.answered[EmptyReceives]++
	p.mu.Unlock()
}

// inFlight counts the queue's messages received through the proxy whose
// visibility timeout has not ended, and forgets handles long expired.
func (p *Proxy) inFlight(queue string) int {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for id, h := range p.handles {
		switch {
		case h.deadline.After(now):
			if h.queue == queue {
				n++
			}
		case now.Sub(h.deadline) > 10*time.Minute:
			delete(p.handles, id)
		}
	}
	return n
}

// visibilityOf is the visibility timeout a receive sets: its own, or the
// queue's.
func (p *Proxy) visibilityOf(ctx context.Context, queue string, asked *int) (time.Duration, error) {
	if asked != nil {
		return time.Duration(*asked) * time.Second, nil
	}
	var out struct{ Attributes map[string]string }
	if err := p.call(ctx, "GetQueueAttributes", map[string]any{"QueueUrl": queue, "AttributeNames": []string{"VisibilityTimeout"}}, &out); err != nil {
		return 0, err
	}
	s, err := strconv.Atoi(out.Attributes["VisibilityTimeout"])
	if err != nil {
		return 0, fmt.Errorf("sqs strict proxy: queue %s has VisibilityTimeout %q: %w", queue, out.Attributes["VisibilityTimeout"], err)
	}
	return time.Duration(s) * time.Second, nil
}

// refusal is why SQS would refuse to set a message's visibility timeout to
// seconds through handle id, or nil.
func (p *Proxy) refusal(id string, seconds int, now time.Time) *EntryError {
	p.mu.Lock()
	h := p.handles[id]
	p.mu.Unlock()
	switch {
	case h == nil:
		return nil // not handed out through the proxy: fauxqs judges
	case !h.deadline.After(now):
		return &EntryError{Code: "MessageNotInflight", Message: "The message referred to isn't in flight.", SenderFault: true}
	case now.Add(time.Duration(seconds)*time.Second).Sub(h.received) > maxVisibility:
		return &EntryError{Code: "InvalidParameterValue", Message: fmt.Sprintf("Value %d for parameter VisibilityTimeout is invalid. Reason: Total VisibilityTimeout for the message is beyond the limit [43200 seconds]", seconds), SenderFault: true}
	}
	return nil
}

// setVisibility records a visibility timeout SQS accepted: 0 makes the
// message visible, so the handle is no longer in flight.
func (p *Proxy) setVisibility(id string, seconds int, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	h := p.handles[id]
	switch {
	case h == nil:
	case seconds == 0:
		delete(p.handles, id)
	default:
		h.deadline = now.Add(time.Duration(seconds) * time.Second)
	}
}

func (p *Proxy) changeVisibility(w http.ResponseWriter, r *http.Request, body []byte) {
	var req struct {
		ReceiptHandle     string
		VisibilityTimeout int
	}
	if json.Unmarshal(body, &req) != nil {
		p.pass(w, r, body)
		return
	}
	if p.ghost(req.ReceiptHandle, false) {
		writeJSON(w, http.StatusOK, []byte("{}"))
		return
	}
	now := time.Now()
	if e := p.refusal(req.ReceiptHandle, req.VisibilityTimeout, now); e != nil {
		writeError(w, APIError{http.StatusBadRequest, e.Code, e.Message})
		return
	}
	status, resp, hdr, err := p.forward(r, body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	if status == http.StatusOK {
		p.setVisibility(req.ReceiptHandle, req.VisibilityTimeout, now)
	}
	copyHeaders(w, hdr)
	writeJSON(w, status, resp)
}

func (p *Proxy) deleteOne(w http.ResponseWriter, r *http.Request, body []byte) {
	var req struct{ ReceiptHandle string }
	_ = json.Unmarshal(body, &req)
	if p.ghost(req.ReceiptHandle, true) {
		writeJSON(w, http.StatusOK, []byte("{}"))
		return
	}
	status, resp, hdr, err := p.forward(r, body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	if status == http.StatusOK {
		p.forget([]entry{{ReceiptHandle: req.ReceiptHandle}}, time.Now())
	}
	copyHeaders(w, hdr)
	writeJSON(w, status, resp)
}

// entry is what the proxy reads of one entry of a batch request.
type entry struct {
	Id                string
	ReceiptHandle     string
	VisibilityTimeout int
	MessageAttributes map[string]json.RawMessage
	raw               json.RawMessage
}

// maxAttributes is the most attributes a message carries
// (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/quotas-messages.html).
const maxAttributes = 10

func tooManyAttributes(n int) *EntryError {
	if n <= maxAttributes {
		return nil
	}
	return &EntryError{Code: "InvalidParameterValue", Message: fmt.Sprintf("Number of message attributes [%d] exceeds the allowed maximum [%d].", n, maxAttributes), SenderFault: true}
}

func checkEntryAttributes(e entry, _ time.Time) *EntryError {
	return tooManyAttributes(len(e.MessageAttributes))
}

// checkAttributes refuses a SendMessage whose message carries more
// attributes than SQS allows (fauxqs takes any number) and forwards the
// rest.
func (p *Proxy) checkAttributes(w http.ResponseWriter, r *http.Request, body []byte) {
	var req struct{ MessageAttributes map[string]json.RawMessage }
	if json.Unmarshal(body, &req) == nil {
		if e := tooManyAttributes(len(req.MessageAttributes)); e != nil {
			writeError(w, APIError{http.StatusBadRequest, e.Code, e.Message})
			return
		}
	}
	p.pass(w, r, body)
}

// failedEntry is one entry of a batch answer's Failed list.
type failedEntry struct {
	Id          string
	SenderFault bool
	Code        string
	Message     string
}

// batch forwards a batch request without the entries that fail: those
// given a fault by FailEntries, and those check refuses (nil: none). The
// answer lists them as Failed beside the entries fauxqs answered, and
// done (nil: nothing) is told which entries succeeded.
func (p *Proxy) batch(w http.ResponseWriter, r *http.Request, op string, body []byte, check func(entry, time.Time) *EntryError, done func([]entry, time.Time)) {
	var req map[string]json.RawMessage
	var raws []json.RawMessage
	if json.Unmarshal(body, &req) != nil || json.Unmarshal(req["Entries"], &raws) != nil {
		p.pass(w, r, body)
		return
	}
	now := time.Now()
	var keep []entry
	var failed []failedEntry
	var ghosts []json.RawMessage // entries on copies' handles: answered here
	for _, raw := range raws {
		e := entry{raw: raw}
		if json.Unmarshal(raw, &e) != nil {
			p.pass(w, r, body)
			return
		}
		if e.ReceiptHandle != "" && p.ghost(e.ReceiptHandle, op == "DeleteMessageBatch") {
			b, _ := json.Marshal(struct{ Id string }{e.Id})
			ghosts = append(ghosts, b)
			continue
		}
		fault := p.takeEntryFault(op)
		if fault == nil && check != nil {
			fault = check(e, now)
		}
		if fault != nil {
			failed = append(failed, failedEntry{Id: e.Id, SenderFault: fault.SenderFault, Code: fault.Code, Message: fault.Message})
			continue
		}
		keep = append(keep, e)
	}
	out := struct {
		Successful []json.RawMessage
		Failed     []json.RawMessage
	}{Successful: []json.RawMessage{}, Failed: []json.RawMessage{}}
	var hdr http.Header
	if len(keep) > 0 {
		rest := make([]json.RawMessage, len(keep))
		for i, e := range keep {
			rest[i] = e.raw
		}
		req["Entries"], _ = json.Marshal(rest)
		fwd, _ := json.Marshal(req)
		status, resp, h, err := p.forward(r, fwd)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		if status != http.StatusOK || json.Unmarshal(resp, &out) != nil {
			copyHeaders(w, h) // the request as a whole failed: its answer stands
			writeJSON(w, status, resp)
			return
		}
		hdr = h
	}
	if done != nil {
		done(succeeded(keep, out.Successful), now)
	}
	out.Successful = append(out.Successful, ghosts...)
	for _, f := range failed {
		b, _ := json.Marshal(f)
		out.Failed = append(out.Failed, b)
	}
	resp, _ := json.Marshal(out)
	copyHeaders(w, hdr)
	writeJSON(w, http.StatusOK, resp)
}

// copyReceived keeps, when Duplicate is on, a copy of each message of a
// ReceiveMessage answer with probability dupShare, for a later receive of
// queue.
func (p *Proxy) copyReceived(queue string, resp []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dupShare <= 0 {
		return
	}
	var out struct{ Messages []copyOf }
	if json.Unmarshal(resp, &out) != nil {
		return
	}
	for _, m := range out.Messages {
		if rand.Float64() < p.dupShare {
			p.copies[queue] = append(p.copies[queue], m)
			p.answered[CopiesMade]++
		}
	}
}

// takeCopies is a ReceiveMessage answer of up to most copies owed to
// queue, each under a receipt handle of its own, or nil when none is
// owed.
func (p *Proxy) takeCopies(queue string, most int) []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	owed := p.copies[queue]
	if len(owed) == 0 {
		return nil
	}
	n := min(max(most, 1), len(owed))
	msgs := make([]copyOf, n)
	for i, m := range owed[:n] {
		var original string
		_ = json.Unmarshal(m["ReceiptHandle"], &original)
		p.ghostSeq++
		h := fmt.Sprintf("sqssim-copy-%d-%s", p.ghostSeq, original)
		p.ghosts[h] = true
		c := maps.Clone(m)
		c["ReceiptHandle"], _ = json.Marshal(h)
		msgs[i] = c
	}
	p.copies[queue] = owed[n:]
	resp, _ := json.Marshal(struct{ Messages []copyOf }{msgs})
	return resp
}

// ghost reports whether handle is a copy's, forgetting it when deleted.
func (p *Proxy) ghost(handle string, deleted bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.ghosts[handle] {
		return false
	}
	if deleted {
		delete(p.ghosts, handle)
	}
	return true
}

// succeeded is the entries the answer's Successful list names.
func succeeded(sent []entry, successful []json.RawMessage) []entry {
	ok := map[string]bool{}
	for _, s := range successful {
		var e struct{ Id string }
		if json.Unmarshal(s, &e) == nil {
			ok[e.Id] = true
		}
	}
	var out []entry
	for _, e := range sent {
		if ok[e.Id] {
			out = append(out, e)
		}
	}
	return out
}

func (p *Proxy) takeEntryFault(op string) *EntryError {
	p.mu.Lock()
	defer p.mu.Unlock()
	q := p.entryFaults[op]
	if len(q) == 0 {
		return nil
	}
	p.entryFaults[op] = q[1:]
	return &q[0]
}

func (p *Proxy) checkVisibility(e entry, now time.Time) *EntryError {
	return p.refusal(e.ReceiptHandle, e.VisibilityTimeout, now)
}

func (p *Proxy) extend(es []entry, now time.Time) {
	for _, e := range es {
		p.setVisibility(e.ReceiptHandle, e.VisibilityTimeout, now)
	}
}

// forget drops the handles of deleted messages.
func (p *Proxy) forget(es []entry, _ time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, e := range es {
		delete(p.handles, e.ReceiptHandle)
	}
}

// checkRedrive refuses a redrive policy SQS would refuse (fauxqs takes any)
// and forwards the rest.
func (p *Proxy) checkRedrive(w http.ResponseWriter, r *http.Request, body []byte) {
	var req struct{ Attributes map[string]string }
	if json.Unmarshal(body, &req) == nil {
		if policy := req.Attributes["RedrivePolicy"]; policy != "" {
			if why := p.redriveRefusal(r.Context(), policy); why != "" {
				writeError(w, APIError{http.StatusBadRequest, "InvalidParameterValue", fmt.Sprintf("Value %s for parameter RedrivePolicy is invalid. Reason: %s", policy, why)})
				return
			}
		}
	}
	p.pass(w, r, body)
}

func (p *Proxy) redriveRefusal(ctx context.Context, policy string) string {
	var pol struct {
		DeadLetterTargetArn string          `json:"deadLetterTargetArn"`
		MaxReceiveCount     json.RawMessage `json:"maxReceiveCount"`
	}
	if err := json.Unmarshal([]byte(policy), &pol); err != nil {
		return "Redrive policy is not a valid JSON map."
	}
	n, err := strconv.Atoi(strings.Trim(string(pol.MaxReceiveCount), `"`))
	if err != nil || n < 1 || n > 1000 {
		return "Value for maxReceiveCount must be an integer from 1 to 1000."
	}
	name := pol.DeadLetterTargetArn[strings.LastIndex(pol.DeadLetterTargetArn, ":")+1:]
	if name == "" || p.call(ctx, "GetQueueUrl", map[string]any{"QueueName": name}, nil) != nil {
		return "Dead letter target does not exist."
	}
	return ""
}

// call sends one request of the proxy's own to fauxqs and decodes the
// answer into out (nil: not read).
func (p *Proxy) call(ctx context.Context, op string, in map[string]any, out any) error {
	body, _ := json.Marshal(in)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.upstream+"/", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", "AmazonSQS."+op)
	resp, err := p.httpc.Do(req)
	if err != nil {
		return fmt.Errorf("sqs strict proxy: %s to %s: %w", op, p.upstream, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("sqs strict proxy: %s: %s: %s", op, resp.Status, b)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(b, out)
}

// pass forwards the request unchanged and copies the answer back.
func (p *Proxy) pass(w http.ResponseWriter, r *http.Request, body []byte) {
	status, resp, hdr, err := p.forward(r, body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	copyHeaders(w, hdr)
	writeJSON(w, status, resp)
}

// forward sends body to fauxqs with the client's headers (fauxqs checks no
// signature, so a body the proxy rewrote is still accepted).
func (p *Proxy) forward(r *http.Request, body []byte) (int, []byte, http.Header, error) {
	status, b, hdr, err := standin.Forward(p.httpc, p.upstream, r, body)
	if err != nil {
		err = fmt.Errorf("sqs strict proxy: %w", err)
	}
	return status, b, hdr, err
}

// withField sets one top-level field of a JSON request body.
func withField(body []byte, name string, value any) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return body
	}
	m[name], _ = json.Marshal(value)
	b, _ := json.Marshal(m)
	return b
}

func copyHeaders(w http.ResponseWriter, hdr http.Header) {
	for _, k := range []string{"X-Amzn-Requestid", "X-Amzn-Query-Error"} {
		if v := hdr.Get(k); v != "" {
			w.Header().Set(k, v)
		}
	}
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// writeError answers with an SQS error as the JSON protocol carries it:
// the code in __type, and the code and fault in x-amzn-query-error, from
// which the SDK reads the error code.
func writeError(w http.ResponseWriter, e APIError) {
	fault := "Sender"
	if e.Status >= 500 {
		fault = "Receiver"
	}
	w.Header().Set("X-Amzn-Query-Error", e.Code+";"+fault)
	body, _ := json.Marshal(map[string]string{"__type": "com.amazonaws.sqs#" + e.Code, "message": e.Message})
	writeJSON(w, e.Status, body)
}

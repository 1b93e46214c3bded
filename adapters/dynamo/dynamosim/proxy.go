package dynamosim

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"hash/fnv"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/skidata/skidata/adapters/standin"
)

// Proxy sits between a client and dynalite and answers as AWS does where
// dynalite would not: it refuses the requests AWS refuses (the strictness
// layer, strict.go), when Options.Throughput is set throttles a partition
// key value past AWS's per-partition throughput (throughput.go), and when
// Options.Lag is set makes index reads and eventually consistent reads see
// the data as it was Lag ago (lag.go).
// It speaks DynamoDB's JSON protocol: the operation is in the X-Amz-Target
// header, the request a JSON body. Every write it lets through is accounted
// to the partition key values of the table and of each global secondary
// index it lands on (Partitions), whether throttling is on or not.
//
// It learns the tables' key schemas from the CreateTable requests passing
// through, or asks dynalite (DescribeTable) the first time it meets a table
// created elsewhere.
type Proxy struct {
	// URL is what clients use as their endpoint.
	URL string

	upstream string
	opts     Options
	srv      *http.Server
	httpc    *http.Client
	describe *dynamodb.Client

	lag *lagModel // nil: reads see every acknowledged write

	locks itemLocks

	mu      sync.Mutex
	schemas map[string]*tableSchema
	parts   map[PartitionKey]*partition
}

// Options tunes a Proxy.
type Options struct {
	// Throughput turns the partition-throughput model on: each partition
	// key value of a table or index serves WriteUnits write units and
	// ReadUnits read units a second, and answers
	// ProvisionedThroughputExceededException beyond that.
	Throughput bool
	// WriteUnits and ReadUnits per partition key value and second; 0 means
	// AWS's 1,000 and 3,000.
	WriteUnits, ReadUnits float64
	// Lag, when not 0, turns the read-lag model on (lag.go): a Query or
	// Scan of a global secondary index, and a Query, Scan or GetItem of a
	// table without ConsistentRead, sees each item as it was Lag ago, so a
	// read right after a write misses it as it can on AWS. 0 (the default)
	// is dynalite's behaviour: every read sees every acknowledged write.
	Lag time.Duration
}

// AWS's per-partition limits.
const (
	PartitionWriteUnits = 1000
	PartitionReadUnits  = 3000
)

// StartProxy listens on a free loopback port and forwards to upstream.
func StartProxy(upstream string, opts Options) (*Proxy, error) {
	if opts.WriteUnits <= 0 {
		opts.WriteUnits = PartitionWriteUnits
	}
	if opts.ReadUnits <= 0 {
		opts.ReadUnits = PartitionReadUnits
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("strictness proxy: listen: %w", err)
	}
	p := &Proxy{
		URL:      "http://" + ln.Addr().String(),
		upstream: strings.TrimSuffix(upstream, "/"),
		opts:     opts,
		httpc: &http.Client{Transport: &http.Transport{
			MaxIdleConns: 256, MaxIdleConnsPerHost: 256, IdleConnTimeout: 90 * time.Second,
		}},
		describe: ClientFor(upstream),
		schemas:  map[string]*tableSchema{},
		parts:    map[PartitionKey]*partition{},
	}
	if opts.Lag > 0 {
		p.lag = newLagModel(opts.Lag)
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

// awsError is DynamoDB's error body.
type awsError struct {
	Type    string `json:"__type"`
	Message string `json:"message"`
}

// Error types as DynamoDB names them on the wire.
const (
	typeValidation = "com.amazon.coral.validate#ValidationException"
	typeThroughput = "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException"
)

// The messages DynamoDB sends with a throttled on-demand request: one for
// the table, one when a global secondary index is short of capacity.
const (
	msgTableThrottled = "Throughput exceeds the current capacity of your table or index. DynamoDB is automatically scaling your table or index so please try again shortly. If exceptions persist, check if you have a hot key: https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html"
	msgIndexThrottled = "Throughput exceeds the current capacity for one or more global secondary indexes. DynamoDB is automatically scaling your index so please try again shortly."
)

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	// The SDK checks the body against this CRC when it is present.
	w.Header().Set("X-Amz-Crc32", fmt.Sprint(crc32.ChecksumIEEE(body)))
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func refuse(w http.ResponseWriter, typ, msg string) {
	body, _ := json.Marshal(awsError{Type: typ, Message: msg})
	writeJSON(w, http.StatusBadRequest, body)
}

// ServeHTTP checks, accounts and forwards one request.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "DynamoDB_20120810.")
	var req request
	if r.Method != http.MethodPost || json.Unmarshal(body, &req) != nil {
		p.pass(w, r, body) // not ours to judge: dynalite answers
		return
	}
	if op == "CreateTable" {
		status, resp, hdr, err := p.forward(r, body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		if status == http.StatusOK {
			p.learn(req.TableName, schemaOf(req.KeySchema, req.GlobalSecondaryIndexes))
		}
		copyHeaders(w, hdr)
		writeJSON(w, status, resp)
		return
	}
	if msg := p.strict(r.Context(), op, &req); msg != "" {
		refuse(w, typeValidation, msg)
		return
	}
	switch {
	case op == "PutItem", op == "UpdateItem", op == "DeleteItem", op == "BatchWriteItem":
		p.write(w, r, op, &req, body)
	case p.lag != nil && lagged(op, &req):
		p.lagRead(w, r, op, &req, body)
	default:
		p.account(w, r, op, &req, body, nil)
	}
}

// write forwards a write with the items it changes locked (itemLocks) and
// read as they are before it: the accounting bills the write on them
// (throughput.go) and the lag model records them (lag.go).
func (p *Proxy) write(w http.ResponseWriter, r *http.Request, op string, req *request, body []byte) {
	keys := p.writtenKeys(r, op, req)
	var refs []itemRef
	for table, ks := range keys {
		s := p.schema(r.Context(), table)
		for _, k := range ks {
			refs = append(refs, itemRef{table, keyString(s.keys, k)})
		}
	}
	defer p.locks.lock(refs)()
	before, err := p.getItems(r, keys)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	if p.lag != nil {
		p.lagWrite(w, r, op, req, body, keys, before)
		return
	}
	p.account(w, r, op, req, body, before)
}

// itemLocks serialises the proxy's writes of one item, from the read of
// its image before the write to the write's answer, so the image a write
// is billed on is the one it replaced. Keys share a fixed number of locks
// (by hash); a request takes its locks in index order, so two requests
// never wait on each other crosswise.
type itemLocks [1024]sync.Mutex

func (l *itemLocks) lock(refs []itemRef) (unlock func()) {
	idx := make([]int, 0, len(refs))
	for _, ref := range refs {
		h := fnv.New32a()
		_, _ = h.Write([]byte(ref.table))
		_, _ = h.Write([]byte{0})
		_, _ = h.Write([]byte(ref.key))
		idx = append(idx, int(h.Sum32()%uint32(len(l))))
	}
	slices.Sort(idx)
	idx = slices.Compact(idx)
	for _, i := range idx {
		l[i].Lock()
	}
	return func() {
		for _, i := range idx {
			l[i].Unlock()
		}
	}
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

func copyHeaders(w http.ResponseWriter, hdr http.Header) {
	for _, k := range []string{"X-Amzn-Requestid", "X-Amzn-RequestId"} {
		if v := hdr.Get(k); v != "" {
			w.Header().Set(k, v)
		}
	}
}

// forward sends body to dynalite with the client's headers (dynalite does
// not check signatures, so a body the proxy rewrote is still accepted).
func (p *Proxy) forward(r *http.Request, body []byte) (int, []byte, http.Header, error) {
	status, b, hdr, err := standin.Forward(p.httpc, p.upstream, r, body)
	if err != nil {
		err = fmt.Errorf("strictness proxy: %w", err)
	}
	return status, b, hdr, err
}

// schema returns the key schema of table, asking dynalite when the proxy
// has not seen it created; nil when the table does not exist.
func (p *Proxy) schema(ctx context.Context, table string) *tableSchema {
	p.mu.Lock()
	s, ok := p.schemas[table]
	p.mu.Unlock()
	if ok {
		return s
	}
	out, err := p.describe.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		return nil
	}
	ks := make([]keyElem, len(out.Table.KeySchema))
	for i, k := range out.Table.KeySchema {
		ks[i] = keyElem{AttributeName: aws.ToString(k.AttributeName), KeyType: string(k.KeyType)}
	}
	var gsis []gsiDef
	for _, g := range out.Table.GlobalSecondaryIndexes {
		d := gsiDef{IndexName: aws.ToString(g.IndexName)}
		for _, k := range g.KeySchema {
			d.KeySchema = append(d.KeySchema, keyElem{AttributeName: aws.ToString(k.AttributeName), KeyType: string(k.KeyType)})
		}
		if g.Projection != nil {
			d.Projection.ProjectionType = string(g.Projection.ProjectionType)
			d.Projection.NonKeyAttributes = g.Projection.NonKeyAttributes
		}
		gsis = append(gsis, d)
	}
	s = schemaOf(ks, gsis)
	p.learn(table, s)
	return s
}

func (p *Proxy) learn(table string, s *tableSchema) {
	p.mu.Lock()
	p.schemas[table] = s
	p.mu.Unlock()
}

// request holds the fields of every operation the proxy looks at.
type request struct {
	TableName                 string
	IndexName                 string
	Item                      attrs
	Key                       attrs
	KeyConditionExpression    string
	ConditionExpression       string
	UpdateExpression          string
	FilterExpression          string
	ProjectionExpression      string
	ExpressionAttributeNames  map[string]string
	ExpressionAttributeValues attrs
	ReturnConsumedCapacity    string
	ReturnValues              string
	ConsistentRead            bool
	Select                    string
	RequestItems              map[string]json.RawMessage
	// CreateTable
	KeySchema              []keyElem
	GlobalSecondaryIndexes []gsiDef
}

type writeRequest struct {
	PutRequest    *struct{ Item attrs } `json:",omitempty"`
	DeleteRequest *struct{ Key attrs }  `json:",omitempty"`
}

type keyElem struct {
	AttributeName string
	KeyType       string
}

type gsiDef struct {
	IndexName  string
	KeySchema  []keyElem
	Projection struct {
		ProjectionType   string
		NonKeyAttributes []string
	}
}

// keys is a primary key: partition (hash) and sort (range) attribute names.
type keys struct{ hash, rng string }

func keysOf(ks []keyElem) keys {
	var k keys
	for _, e := range ks {
		if e.KeyType == "HASH" {
			k.hash = e.AttributeName
		} else {
			k.rng = e.AttributeName
		}
	}
	return k
}

func (k keys) names() []string {
	if k.rng == "" {
		return []string{k.hash}
	}
	return []string{k.hash, k.rng}
}

type index struct {
	name       string
	keys       keys
	projection string
	include    []string
}

type tableSchema struct {
	keys    keys
	indexes []index
}

func schemaOf(ks []keyElem, gsis []gsiDef) *tableSchema {
	s := &tableSchema{keys: keysOf(ks)}
	for _, g := range gsis {
		s.indexes = append(s.indexes, index{name: g.IndexName, keys: keysOf(g.KeySchema),
			projection: g.Projection.ProjectionType, include: g.Projection.NonKeyAttributes})
	}
	return s
}

func (s *tableSchema) index(name string) *index {
	for i := range s.indexes {
		if s.indexes[i].name == name {
			return &s.indexes[i]
		}
	}
	return nil
}

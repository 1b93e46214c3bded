package dynamosim

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// The strictness layer: what AWS refuses and dynalite 4 accepts, or
// accepts in some places only. Each rule answers a ValidationException
// with AWS's message; docs/dynamodb.md lists the rules and what is not
// modelled.

// attrs is an item or key in DynamoDB JSON: name -> {"S": "..."}.
type attrs map[string]map[string]any

// MaxItemBytes is DynamoDB's item size limit.
const MaxItemBytes = 400 * 1024

// MaxBatchWrite is BatchWriteItem's limit of requests per call.
const MaxBatchWrite = 25

const (
	msgEmptyKeyString = "One or more parameter values are not valid. The AttributeValue for a key attribute cannot contain an empty %s value. Key: %s"
	msgEmptyKeyInKey  = "One or more parameter values were invalid: The AttributeValue for a key attribute cannot contain an empty %s value. Key: %s"
	msgItemTooLarge   = "Item size has exceeded the maximum allowed size"
	msgBatchTooLarge  = "1 validation error detected: Value '{%s}' at 'requestItems' failed to satisfy constraint: Map value must satisfy constraint: [Member must have length less than or equal to 25, Member must have length greater than or equal to 1]"
	msgBatchTooMany   = "Too many items requested for the BatchWriteItem call"
	msgBatchDuplicate = "Provided list of item keys contains duplicates"
	msgNameUndefined  = "Invalid %s: An expression attribute name used in the document path is not defined; attribute name: %s"
	msgValueUndefined = "Invalid %s: An expression attribute value used in expression is not defined; attribute value: %s"
	msgNamesUnused    = "Value provided in ExpressionAttributeNames unused in expressions: keys: {%s}"
	msgValuesUnused   = "Value provided in ExpressionAttributeValues unused in expressions: keys: {%s}"
)

// strict returns AWS's message refusing the request, or "" when AWS would
// take it.
func (p *Proxy) strict(ctx context.Context, op string, req *request) string {
	if msg := checkExpressions(req); msg != "" {
		return msg
	}
	switch op {
	case "BatchWriteItem":
		return p.strictBatchWrite(ctx, req)
	case "BatchGetItem":
		return ""
	}
	if req.TableName == "" {
		return ""
	}
	s := p.schema(ctx, req.TableName)
	if s == nil {
		return "" // dynalite answers ResourceNotFoundException
	}
	switch op {
	case "PutItem":
		return checkItem(s, req.Item)
	case "GetItem", "DeleteItem":
		return checkKey(s.keys, req.Key)
	case "UpdateItem":
		if msg := checkKey(s.keys, req.Key); msg != "" {
			return msg
		}
		// An index key set to an empty string by the update.
		for name, v := range assignments(req.UpdateExpression, req.ExpressionAttributeNames, req.ExpressionAttributeValues) {
			for _, ix := range s.indexes {
				if slices.Contains(ix.keys.names(), name) {
					if kind := emptyKind(v); kind != "" {
						return fmt.Sprintf(msgEmptyKeyString, kind, name)
					}
				}
			}
		}
	case "Query":
		return checkKeyCondition(req)
	}
	return ""
}

func (p *Proxy) strictBatchWrite(ctx context.Context, req *request) string {
	total := 0
	tables := make([]string, 0, len(req.RequestItems))
	for t := range req.RequestItems {
		tables = append(tables, t)
	}
	sort.Strings(tables)
	for _, table := range tables {
		var wrs []writeRequest
		if err := json.Unmarshal(req.RequestItems[table], &wrs); err != nil {
			return "" // malformed: dynalite answers
		}
		if len(wrs) > MaxBatchWrite {
			return fmt.Sprintf(msgBatchTooLarge, table+"=[...]")
		}
		total += len(wrs)
		s := p.schema(ctx, table)
		if s == nil {
			continue
		}
		seen := map[string]bool{}
		for _, wr := range wrs {
			var key attrs
			switch {
			case wr.PutRequest != nil:
				if msg := checkItem(s, wr.PutRequest.Item); msg != "" {
					return msg
				}
				key = wr.PutRequest.Item
			case wr.DeleteRequest != nil:
				if msg := checkKey(s.keys, wr.DeleteRequest.Key); msg != "" {
					return msg
				}
				key = wr.DeleteRequest.Key
			}
			k := keyString(s.keys, key)
			if seen[k] {
				return msgBatchDuplicate
			}
			seen[k] = true
		}
	}
	if total > MaxBatchWrite {
		return msgBatchTooMany
	}
	return ""
}

// checkItem refuses an item whose table or index key attribute is an
// empty string or binary, or that is larger than 400 KB.
func checkItem(s *tableSchema, it attrs) string {
	for _, name := range s.keys.names() {
		if kind := emptyKind(it[name]); kind != "" {
			return fmt.Sprintf(msgEmptyKeyString, kind, name)
		}
	}
	for _, ix := range s.indexes {
		for _, name := range ix.keys.names() {
			if kind := emptyKind(it[name]); kind != "" {
				return fmt.Sprintf(msgEmptyKeyString, kind, name)
			}
		}
	}
	if itemSize(it) > MaxItemBytes {
		return msgItemTooLarge
	}
	return ""
}

func checkKey(k keys, key attrs) string {
	for _, name := range k.names() {
		if kind := emptyKind(key[name]); kind != "" {
			return fmt.Sprintf(msgEmptyKeyInKey, kind, name)
		}
	}
	return ""
}

// emptyKind is "string" or "binary" when v is an empty S or B.
func emptyKind(v map[string]any) string {
	if s, ok := v["S"].(string); ok && s == "" {
		return "string"
	}
	if b, ok := v["B"].(string); ok && b == "" {
		return "binary"
	}
	return ""
}

var (
	// A comparison or assignment "name op :value" in an expression.
	reCompare = regexp.MustCompile(`(#?[A-Za-z0-9_.]+)\s*(?:=|<>|<=|>=|<|>)\s*(:[A-Za-z0-9_]+)`)
	// begins_with(name, :value)
	reBeginsWith = regexp.MustCompile(`(?i)begins_with\s*\(\s*(#?[A-Za-z0-9_.]+)\s*,\s*(:[A-Za-z0-9_]+)\s*\)`)
	// name BETWEEN :a AND :b
	reBetween = regexp.MustCompile(`(?i)(#?[A-Za-z0-9_.]+)\s+BETWEEN\s+(:[A-Za-z0-9_]+)\s+AND\s+(:[A-Za-z0-9_]+)`)

	reName  = regexp.MustCompile(`#[A-Za-z0-9_]+`)
	reValue = regexp.MustCompile(`:[A-Za-z0-9_]+`)
)

func resolve(name string, names map[string]string) string {
	if strings.HasPrefix(name, "#") {
		return names[name]
	}
	return name
}

// keyConditionValues pairs every attribute of a key condition with the
// values it is compared to.
func keyConditionValues(req *request) map[string][]map[string]any {
	out := map[string][]map[string]any{}
	expr := req.KeyConditionExpression
	for _, m := range reBeginsWith.FindAllStringSubmatch(expr, -1) {
		out[resolve(m[1], req.ExpressionAttributeNames)] = append(out[resolve(m[1], req.ExpressionAttributeNames)], req.ExpressionAttributeValues[m[2]])
	}
	for _, m := range reBetween.FindAllStringSubmatch(expr, -1) {
		n := resolve(m[1], req.ExpressionAttributeNames)
		out[n] = append(out[n], req.ExpressionAttributeValues[m[2]], req.ExpressionAttributeValues[m[3]])
	}
	for _, m := range reCompare.FindAllStringSubmatch(expr, -1) {
		n := resolve(m[1], req.ExpressionAttributeNames)
		out[n] = append(out[n], req.ExpressionAttributeValues[m[2]])
	}
	return out
}

// checkKeyCondition refuses a key condition comparing a key attribute to
// an empty string or binary (e.g. begins_with(SK, :p) with :p = "").
func checkKeyCondition(req *request) string {
	vals := keyConditionValues(req)
	names := make([]string, 0, len(vals))
	for n := range vals {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		for _, v := range vals[n] {
			if kind := emptyKind(v); kind != "" {
				return fmt.Sprintf(msgEmptyKeyString, kind, n)
			}
		}
	}
	return ""
}

// assignments returns the "SET name = :value" assignments of an update
// expression, by attribute name.
func assignments(update string, names map[string]string, values attrs) map[string]map[string]any {
	out := map[string]map[string]any{}
	set := update
	if i := strings.Index(strings.ToUpper(set), "SET "); i >= 0 {
		set = set[i+4:]
	} else {
		return out
	}
	for _, kw := range []string{" ADD ", " REMOVE ", " DELETE "} {
		if i := strings.Index(strings.ToUpper(set), kw); i >= 0 {
			set = set[:i]
		}
	}
	for _, m := range reCompare.FindAllStringSubmatch(set, -1) {
		out[resolve(m[1], names)] = values[m[2]]
	}
	return out
}

// checkExpressions refuses a placeholder used but not defined, and one
// defined but not used, as AWS does (dynalite checks only some
// expressions).
func checkExpressions(req *request) string {
	exprs := []struct{ kind, text string }{
		{"KeyConditionExpression", req.KeyConditionExpression},
		{"ConditionExpression", req.ConditionExpression},
		{"UpdateExpression", req.UpdateExpression},
		{"FilterExpression", req.FilterExpression},
		{"ProjectionExpression", req.ProjectionExpression},
	}
	usedNames, usedValues := map[string]bool{}, map[string]bool{}
	for _, e := range exprs {
		for _, n := range reName.FindAllString(e.text, -1) {
			if _, ok := req.ExpressionAttributeNames[n]; !ok {
				return fmt.Sprintf(msgNameUndefined, e.kind, n)
			}
			usedNames[n] = true
		}
		for _, v := range reValue.FindAllString(e.text, -1) {
			if _, ok := req.ExpressionAttributeValues[v]; !ok {
				return fmt.Sprintf(msgValueUndefined, e.kind, v)
			}
			usedValues[v] = true
		}
	}
	var unusedNames, unusedValues []string
	for n := range req.ExpressionAttributeNames {
		if !usedNames[n] {
			unusedNames = append(unusedNames, n)
		}
	}
	for v := range req.ExpressionAttributeValues {
		if !usedValues[v] {
			unusedValues = append(unusedValues, v)
		}
	}
	sort.Strings(unusedNames)
	sort.Strings(unusedValues)
	if len(unusedNames) > 0 {
		return fmt.Sprintf(msgNamesUnused, strings.Join(unusedNames, ", "))
	}
	if len(unusedValues) > 0 {
		return fmt.Sprintf(msgValuesUnused, strings.Join(unusedValues, ", "))
	}
	return ""
}

// keyString identifies an item by its primary key.
func keyString(k keys, it attrs) string {
	var b strings.Builder
	for _, n := range k.names() {
		b.WriteString(valueString(it[n]))
		b.WriteByte('|')
	}
	return b.String()
}

// valueString renders a scalar key value.
func valueString(v map[string]any) string {
	for _, t := range []string{"S", "N", "B"} {
		if s, ok := v[t].(string); ok {
			return s
		}
	}
	return ""
}

// itemSize is an item's size as DynamoDB bills and limits it: attribute
// names plus values (strings and binaries by length, numbers by
// numberSize, 1 byte for a boolean or null, 3 bytes and 1 per element for
// lists and maps).
func itemSize(it attrs) int {
	n := 0
	for name, v := range it {
		n += len(name) + valueSize(v)
	}
	return n
}

func valueSize(v map[string]any) int {
	for t, x := range v {
		switch t {
		case "S":
			s, _ := x.(string)
			return len(s)
		case "N":
			s, _ := x.(string)
			return numberSize(s)
		case "B":
			s, _ := x.(string)
			b, _ := base64.StdEncoding.DecodeString(s)
			return len(b)
		case "BOOL", "NULL":
			return 1
		case "SS", "NS", "BS":
			n := 0
			for _, e := range x.([]any) {
				s, _ := e.(string)
				switch t {
				case "SS":
					n += len(s)
				case "NS":
					n += numberSize(s)
				default:
					b, _ := base64.StdEncoding.DecodeString(s)
					n += len(b)
				}
			}
			return n
		case "L":
			n := 3
			for _, e := range x.([]any) {
				m, _ := e.(map[string]any)
				n += 1 + valueSize(m)
			}
			return n
		case "M":
			n := 3
			for name, e := range x.(map[string]any) {
				m, _ := e.(map[string]any)
				n += 1 + len(name) + valueSize(m)
			}
			return n
		}
	}
	return 0
}

// numberSize is a number's size as AWS documents it: 1 byte per two
// significant digits, plus 1. Sign, decimal point and exponent are not
// digits; leading and trailing zeros are not significant ("1000" and
// "0.001" are one digit, 2 bytes; "0" none, 1 byte).
func numberSize(s string) int {
	m := strings.TrimLeft(s, "+-")
	if i := strings.IndexAny(m, "eE"); i >= 0 {
		m = m[:i]
	}
	m = strings.Trim(strings.Replace(m, ".", "", 1), "0")
	return (len(m)+1)/2 + 1
}

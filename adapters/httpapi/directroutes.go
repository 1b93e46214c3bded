package httpapi

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
)

// The direct routes serve the requests a resort makes all day (a lift's
// ride, and the three queries skiload measures) without the generated
// wrapper, when the request is the common one: ids within 32 bits, the
// query parameters present, and for a ride no Content-Encoding and a body
// of declared length that is the plain {"time":T,"liftID":L} object. They
// read the ids with strconv, the query once and a ride's body once, where
// the generated route binds each parameter by reflection, parses the query
// once per parameter, reads the body for the strict check (strictBodies)
// and decodes it again with encoding/json: in-process that was 15 of a
// POST's 46 allocations, and 15 of a season-totals GET's 59.
//
// Any other request goes to the generated route as it came (a ride's body,
// if read, handed on unchanged), so every answer, errors included, is the
// generated route's: TestTheDirectRoutesAnswerAsTheGeneratedRoutes and its
// fuzz target hold the two to it.

// Patterns of the direct routes, as the generated code registers them.
const (
	dayVerticalPattern  = "GET /skiers/{resortID}/seasons/{seasonID}/days/{dayID}/skiers/{skierID}"
	resortTotalsPattern = "GET /skiers/{skierID}/vertical"
	resortSkiersPattern = "GET /resorts/{resortID}/seasons/{seasonID}/day/{dayID}/skiers"
)

// direct holds what the direct routes answer with.
type direct struct {
	h    *Handlers
	errs errorWriter
}

// routes maps each direct route's pattern to the handler that serves it in
// front of the generated one.
func (d direct) routes() map[string]func(generated http.Handler) http.Handler {
	serve := func(try func(http.ResponseWriter, *http.Request) bool) func(http.Handler) http.Handler {
		return func(generated http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if !try(w, r) {
					generated.ServeHTTP(w, r)
				}
			})
		}
	}
	return map[string]func(http.Handler) http.Handler{
		writeRidePattern: serve(func(w http.ResponseWriter, r *http.Request) bool {
			return d.writeRide(w, r, r.PathValue("resortID"), r.PathValue("seasonID"), r.PathValue("dayID"), r.PathValue("skierID"))
		}),
		dayVerticalPattern: serve(func(w http.ResponseWriter, r *http.Request) bool {
			return d.dayVertical(w, r, r.PathValue("resortID"), r.PathValue("seasonID"), r.PathValue("dayID"), r.PathValue("skierID"))
		}),
		resortTotalsPattern: serve(func(w http.ResponseWriter, r *http.Request) bool {
			return d.resortTotals(w, r, r.PathValue("skierID"))
		}),
		resortSkiersPattern: serve(func(w http.ResponseWriter, r *http.Request) bool {
			return d.resortSkiers(w, r, r.PathValue("resortID"), r.PathValue("seasonID"), r.PathValue("dayID"))
		}),
	}
}

// serveFast answers a request to a direct route without the ServeMux when
// its path and query are in the one form the mux would route unchanged to
// the route's checks and pass: the method the route's pattern names (GET,
// not HEAD), no escapes in the path, every segment the pattern's literal
// or a path parameter in plain decimal, a query that parses. It sets
// r.Pattern as the mux would. Any other request, and one the route's
// handler hands on (false), is left to the mux. The ServeMux cost a POST
// in memory mode about 0.8 µs of CPU in finding the route (three
// allocations of its own, docs/benchmarks.md); TestTheDirectRoutesAnswerAsTheGeneratedRoutes
// and its fuzz target hold the answers and statistics to the mux's.
func (d direct) serveFast(w http.ResponseWriter, r *http.Request) bool {
	if r.URL.RawPath != "" || malformedQuery(r.URL.RawQuery) != "" {
		return false
	}
	var seg [8]string
	n, ok := splitPath(r.URL.Path, seg[:])
	if !ok {
		return false
	}
	served := false
	switch {
	case n == 8 && seg[0] == "skiers" && seg[2] == "seasons" && seg[4] == "days" && seg[6] == "skiers" &&
		decimals(seg[1], seg[3], seg[5], seg[7]):
		switch r.Method {
		case http.MethodPost:
			r.Pattern = writeRidePattern
			served = d.writeRide(w, r, seg[1], seg[3], seg[5], seg[7])
		case http.MethodGet:
			r.Pattern = dayVerticalPattern
			served = d.dayVertical(w, r, seg[1], seg[3], seg[5], seg[7])
		}
	case n == 3 && seg[0] == "skiers" && seg[2] == "vertical" && decimals(seg[1]) && r.Method == http.MethodGet:
		r.Pattern = resortTotalsPattern
		served = d.resortTotals(w, r, seg[1])
	case n == 7 && seg[0] == "resorts" && seg[2] == "seasons" && seg[4] == "day" && seg[6] == "skiers" &&
		decimals(seg[1], seg[3], seg[5]) && r.Method == http.MethodGet:
		r.Pattern = resortSkiersPattern
		served = d.resortSkiers(w, r, seg[1], seg[3], seg[5])
	}
	if !served {
		r.Pattern = "" // the mux sets it again
	}
	return served
}

// splitPath cuts an absolute path into its segments, in seg; ok is false
// for a path that is not absolute or has more segments than seg holds.
func splitPath(path string, seg []string) (n int, ok bool) {
	rest, found := strings.CutPrefix(path, "/")
	if !found {
		return 0, false
	}
	for {
		if n == len(seg) {
			return 0, false
		}
		var more bool
		seg[n], rest, more = strings.Cut(rest, "/")
		n++
		if !more {
			return n, true
		}
	}
}

// decimals says whether every value is a path parameter the routes' checks
// pass (canonicalDecimal).
func decimals(values ...string) bool {
	for _, v := range values {
		if !canonicalDecimal(v) {
			return false
		}
	}
	return true
}

// parseInt32 reads a path parameter as an int32, as the generated binding
// reads it (the router, or serveFast, has already refused any spelling but
// plain decimal).
func parseInt32(s string) (int32, bool) {
	v, err := strconv.ParseInt(s, 10, 32)
	return int32(v), err == nil
}

// answer ends a direct route as the generated strict handler would: the
// handler's response written by its visit method, or err from the handler
// or from the writing given to the error writer.
func answer[R any](d direct, w http.ResponseWriter, r *http.Request, resp R, err error, visit func(R, http.ResponseWriter) error) bool {
	if err == nil {
		err = visit(resp, w)
	}
	if err != nil {
		d.errs.responseError(w, r, err)
	}
	return true
}

func (d direct) writeRide(w http.ResponseWriter, r *http.Request, resortID, seasonID, dayID, skierID string) bool {
	resort, rok := parseInt32(resortID)
	skier, sok := parseInt32(skierID)
	if !rok || !sok || r.ContentLength <= 0 || r.Header["Content-Encoding"] != nil {
		return false
	}
	body, err := readBody(r)
	if err != nil {
		d.errs.requestError(w, r, err) // as strictBodies answers it
		return true
	}
	t, lift, ok := scanRide(body)
	if !ok {
		r.Body = io.NopCloser(bytes.NewReader(body))
		return false
	}
	ctx := r.Context()
	if d.h.ClientAddress != nil { // as clientOfRide does
		ctx = ports.WithClient(ctx, d.h.ClientAddress(r))
	}
	// WriteNewLiftRide, its body known to hold both fields.
	var resp WriteNewLiftRideResponseObject
	day, err := domain.ParseDayID(dayID)
	if err == nil {
		resp, err = d.h.addRide(ctx, resort, seasonID, day, skier, t, lift)
	}
	return answer(d, w, r, resp, err, WriteNewLiftRideResponseObject.VisitWriteNewLiftRideResponse)
}

func (d direct) dayVertical(w http.ResponseWriter, r *http.Request, resortID, seasonID, dayID, skierID string) bool {
	resort, rok := parseInt32(resortID)
	skier, sok := parseInt32(skierID)
	if !rok || !sok {
		return false
	}
	resp, err := d.h.GetSkierDayVertical(r.Context(), GetSkierDayVerticalRequestObject{
		ResortID: resort, SeasonID: seasonID, DayID: dayID, SkierID: skier,
	})
	return answer(d, w, r, resp, err, GetSkierDayVerticalResponseObject.VisitGetSkierDayVerticalResponse)
}

func (d direct) resortTotals(w http.ResponseWriter, r *http.Request, skierID string) bool {
	skier, ok := parseInt32(skierID)
	resorts, seasons := totalsQuery(r)
	if !ok || resorts == nil {
		return false
	}
	params := GetSkierResortTotalsParams{Resort: resorts}
	if seasons != nil {
		params.Season = &seasons
	}
	resp, err := d.h.GetSkierResortTotals(r.Context(), GetSkierResortTotalsRequestObject{SkierID: skier, Params: params})
	return answer(d, w, r, resp, err, visitTotals)
}

// visitTotals is the generated Visit, with the common body encoded by hand
// (appendTotals).
func visitTotals(resp GetSkierResortTotalsResponseObject, w http.ResponseWriter) error {
	if totals, ok := resp.(GetSkierResortTotals200JSONResponse); ok {
		if body, plain := appendTotals(nil, totals); plain {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			_, err := w.Write(body)
			return err
		}
	}
	return resp.VisitGetSkierResortTotalsResponse(w)
}

// totalsQuery is the query's resort and season values as r.URL.Query()
// reads them (nil: the parameter is absent), without its map when the
// query has no escapes: then every value is the text between its '=' and
// the next '&'.
func totalsQuery(r *http.Request) (resorts, seasons []string) {
	raw := r.URL.RawQuery
	if strings.ContainsAny(raw, "%+") {
		query := r.URL.Query()
		return query["resort"], query["season"]
	}
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		switch key, value, _ := strings.Cut(pair, "="); key {
		case "resort":
			resorts = append(resorts, value)
		case "season":
			seasons = append(seasons, value)
		}
	}
	return resorts, seasons
}

// appendTotals appends the body encoding/json writes for t (the generated
// Visit's), by hand, when every season id is plain text that JSON writes
// as it is (letters, digits, '-', '_', '.'); plain is false otherwise, and
// the generated Visit answers. Encoding the totals by reflection was about
// 2% of a season-totals GET's CPU in a profile at 8,000/s.
func appendTotals(b []byte, t GetSkierResortTotals200JSONResponse) (body []byte, plain bool) {
	if t.Resorts == nil {
		return nil, false
	}
	b = append(b, `{"resorts":[`...)
	for i, sv := range t.Resorts {
		if !plainJSONText(sv.SeasonID) {
			return nil, false
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"seasonID":"`...)
		b = append(b, sv.SeasonID...)
		b = append(b, `","totalVert":`...)
		b = strconv.AppendInt(b, sv.TotalVert, 10)
		b = append(b, '}')
	}
	return append(b, "]}\n"...), true
}

// plainJSONText: s is written by encoding/json between quotes as it is.
func plainJSONText(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

func (d direct) resortSkiers(w http.ResponseWriter, r *http.Request, resortID, seasonID, dayID string) bool {
	resort, rok := parseInt32(resortID)
	season, sok := parseInt32(seasonID)
	day, dok := parseInt32(dayID)
	if !rok || !sok || !dok {
		return false
	}
	resp, err := d.h.GetResortSkiersDay(r.Context(), GetResortSkiersDayRequestObject{ResortID: resort, SeasonID: season, DayID: day})
	return answer(d, w, r, resp, err, GetResortSkiersDayResponseObject.VisitGetResortSkiersDayResponse)
}

// scanRide reads {"time":T,"liftID":L} (either order, JSON white space
// anywhere between tokens), T and L integers in int32's range written as
// JSON writes them. ok is false for every other body.
func scanRide(b []byte) (t, lift int32, ok bool) {
	var seenTime, seenLift bool
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return 0, 0, false
	}
	for _, closer := range []byte{',', '}'} {
		i = skipSpace(b, i+1)
		if i >= len(b) || b[i] != '"' {
			return 0, 0, false
		}
		end := i + 1
		for end < len(b) && isNameByte(b[end]) {
			end++
		}
		if end >= len(b) || b[end] != '"' {
			return 0, 0, false
		}
		name := string(b[i+1 : end]) // no allocation: compared, not kept
		i = skipSpace(b, end+1)
		if i >= len(b) || b[i] != ':' {
			return 0, 0, false
		}
		v, next, vok := scanInt32(b, skipSpace(b, i+1))
		if !vok {
			return 0, 0, false
		}
		switch {
		case name == "time" && !seenTime:
			t, seenTime = v, true
		case name == "liftID" && !seenLift:
			lift, seenLift = v, true
		default:
			return 0, 0, false
		}
		i = skipSpace(b, next)
		if i >= len(b) || b[i] != closer {
			return 0, 0, false // the first field is followed by a comma, the second ends the object
		}
	}
	return t, lift, skipSpace(b, i+1) == len(b)
}

// scanInt32 reads a JSON integer at b[i:]: an optional minus, then 0 or a
// digit 1-9 followed by digits, not followed by a fraction or exponent,
// within int32's range. next is the index after it.
func scanInt32(b []byte, i int) (v int32, next int, ok bool) {
	neg := i < len(b) && b[i] == '-'
	if neg {
		i++
	}
	start := i
	var n int64
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		n = n*10 + int64(b[i]-'0')
		if n > 1<<31 {
			return 0, 0, false
		}
		i++
	}
	switch {
	case i == start, i-start > 1 && b[start] == '0':
		return 0, 0, false
	case i < len(b) && (b[i] == '.' || b[i] == 'e' || b[i] == 'E'):
		return 0, 0, false
	}
	if neg {
		n = -n
	}
	if n > 1<<31-1 || n < -1<<31 {
		return 0, 0, false
	}
	return int32(n), i, true
}

package sqs

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/skidata/skidata/domain"
)

// A message body is text, as SQS requires (only XML's characters are
// allowed in a body, so binary would need base64): a first line naming the
// format, then one line per ride holding the ride's identity as
// domain.LiftRide.Key writes it (resort/season/day/skier/time/lift, in
// decimal). It is readable as it is in the SQS console and in `skiapi dlq
// list`; a typical ride's line (about 26 bytes) is shorter than a binary
// record in base64 would be (29), the longest (maxRideLine) 41 bytes.
//
//	skidata.rides.v1
//	12/2024/150/123456/420/40
//	12/2024/150/123457/421/7
const bodyHeader = "skidata.rides.v1\n"

// maxRideLine is the longest line of a ride, every field at its widest:
// "2147483647/9999/366/2147483647/1439/1000\n" (ids are positive int32s;
// a test checks it against domain.LiftRide.Key).
const maxRideLine = 41

// MaxRidesPerMessage is the most rides one message carries so that it
// stays within one billing chunk (BillingChunk), whatever the rides: a
// message of more would cost two billed requests to send, two to receive.
// The group commit is given it as its MaxRides.
const MaxRidesPerMessage = (BillingChunk - len(bodyHeader)) / maxRideLine

// encodeBody is the body of a message of rides.
func encodeBody(rides []domain.LiftRide) string {
	var b strings.Builder
	b.Grow(len(bodyHeader) + len(rides)*(maxRideLine/2+6))
	b.WriteString(bodyHeader)
	for _, r := range rides {
		b.WriteString(r.Key())
		b.WriteByte('\n')
	}
	return b.String()
}

// decodeBody reads a body encodeBody wrote. Each ride is validated, so a
// corrupt or foreign body is recognised as unreadable rather than stored.
func decodeBody(body string) ([]domain.LiftRide, error) {
	lines, ok := strings.CutPrefix(body, bodyHeader)
	if !ok {
		first, _, _ := strings.Cut(body, "\n")
		return nil, fmt.Errorf("not a ride message: first line %.40q, want %q", first, strings.TrimSuffix(bodyHeader, "\n"))
	}
	lines = strings.TrimSuffix(lines, "\n")
	if lines == "" {
		return nil, fmt.Errorf("ride message holds no ride")
	}
	rides := make([]domain.LiftRide, 0, strings.Count(lines, "\n")+1)
	for i := 0; lines != ""; i++ {
		var line string
		line, lines, _ = strings.Cut(lines, "\n")
		r, err := parseRide(line)
		if err != nil {
			return nil, fmt.Errorf("ride %d of the message: %w", i+1, err)
		}
		rides = append(rides, r)
	}
	return rides, nil
}

// parseRide reads one line: the ride's Key.
func parseRide(line string) (domain.LiftRide, error) {
	f := strings.Split(line, "/")
	if len(f) != 6 {
		return domain.LiftRide{}, fmt.Errorf("%.60q is not resort/season/day/skier/time/lift", line)
	}
	var n [6]int64
	for i, s := range f {
		if i == 1 || i == 2 {
			continue // the season and the day: the domain parses them
		}
		v, err := strconv.ParseInt(s, 10, 32)
		if err != nil {
			return domain.LiftRide{}, fmt.Errorf("%.60q: field %d: %w", line, i+1, err)
		}
		n[i] = v
	}
	season, err := domain.ParseSeason(f[1])
	if err != nil {
		return domain.LiftRide{}, fmt.Errorf("%.60q: %w", line, err)
	}
	day, err := domain.ParseDay(f[2])
	if err != nil {
		return domain.LiftRide{}, fmt.Errorf("%.60q: %w", line, err)
	}
	r, err := domain.NewLiftRide(domain.ResortID(n[0]), season, day, domain.SkierID(n[3]), int32(n[4]), int32(n[5]))
	if err != nil {
		return domain.LiftRide{}, fmt.Errorf("%.60q: %w", line, err)
	}
	return r, nil
}

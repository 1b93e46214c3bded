package dynamo

import (
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/skidata/skidata/domain"
)

// Keys are strings compared byte by byte, so every number in them is
// zero-padded to a fixed width: then "day 5" sorts before "day 30" and a
// begins_with on "season#day#" cannot match day 50 when asking for day 5.

// A season is kept as its text form (String, "2024"): an S attribute and
// the first part of every sort key. A day is kept as its number: an N
// attribute, zero-padded in keys. Both are read back through the domain's
// constructors (getSeason, getDay).

// dayPrefix is "season#ddd#", the prefix of every key of one day.
func dayPrefix(season domain.Season, day domain.Day) string {
	return fmt.Sprintf("%s#%03d#", season, day.Number())
}

// seasonPrefix is "season#".
func seasonPrefix(season domain.Season) string { return season.String() + "#" }

// rideSortKey is the adopted model's sort key: the ride's full identity
// within its skier (season, day, time, lift, resort), so the same ride
// written again lands on the same item. Time comes before lift and resort so
// a skier's day reads back in time order.
func rideSortKey(r domain.LiftRide) string {
	return fmt.Sprintf("%s#%03d#%010d#%010d#%010d", r.SeasonID(), r.DayID().Number(), r.Time(), r.LiftID(), r.ResortID())
}

// skierDaySortKey is the abandoned model's sort key: one item per skier,
// day and resort (a skier can ride at two resorts on one day).
func skierDaySortKey(season domain.Season, day domain.Day, resort domain.ResortID) string {
	return fmt.Sprintf("%s#%03d#%010d", season, day.Number(), resort)
}

// seasonDaySkier is the GSI sort key of both models.
func seasonDaySkier(season domain.Season, day domain.Day, skier domain.SkierID) string {
	return fmt.Sprintf("%s#%03d#%010d", season, day.Number(), skier)
}

func numAttr(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

func strAttr(s string) types.AttributeValue {
	return &types.AttributeValueMemberS{Value: s}
}

// item is what a read returns; the helpers turn its attributes back into Go
// values and say which attribute was wrong when one is.
type item = map[string]types.AttributeValue

func getNum(it item, name string) (int64, error) {
	v, ok := it[name].(*types.AttributeValueMemberN)
	if !ok {
		return 0, fmt.Errorf("attribute %s is missing or not a number", name)
	}
	n, err := strconv.ParseInt(v.Value, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("attribute %s: %w", name, err)
	}
	return n, nil
}

func getStr(it item, name string) (string, error) {
	v, ok := it[name].(*types.AttributeValueMemberS)
	if !ok {
		return "", fmt.Errorf("attribute %s is missing or not a string", name)
	}
	return v.Value, nil
}

func getSeason(it item, name string) (domain.Season, error) {
	v, err := getStr(it, name)
	if err != nil {
		return domain.Season{}, err
	}
	s, err := domain.ParseSeason(v)
	if err != nil {
		return s, fmt.Errorf("attribute %s: %w", name, err)
	}
	return s, nil
}

func getDay(it item, name string) (domain.Day, error) {
	n, err := getNum(it, name)
	if err != nil {
		return domain.Day{}, err
	}
	d, err := domain.NewDay(int(n))
	if err != nil {
		return d, fmt.Errorf("attribute %s: %w", name, err)
	}
	return d, nil
}

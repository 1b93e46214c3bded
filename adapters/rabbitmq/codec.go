package rabbitmq

import (
	"encoding/binary"
	"fmt"

	"github.com/skidata/skidata/domain"
)

// A message body is versioned by its first byte, so the format can change
// without misreading old messages (those still queued, or dead-lettered
// before an upgrade):
//
//	version 1: one ride, a fixed 23-byte record (the version byte, then the
//	           22-byte ride record below). Written by older releases and by
//	           the consumer when it dead-letters one ride of a batch alone.
//	version 2: a batch: the version byte, a uint16 count n (1..maxBatch),
//	           then n ride records. Publish writes this: rides published
//	           together to one shard share one message and one confirm.
//
// A ride record, big-endian:
//
//	0..3   resortID  int32
//	4..7   seasonID  four ASCII digits
//	8..9   dayID     uint16
//	10..13 skierID   int32
//	14..17 time      int32
//	18..21 liftID    int32
const (
	singleVersion = 1
	batchVersion  = 2
	recordLen     = 22
	singleLen     = 1 + recordLen
	batchHeader   = 3
	// maxBatch bounds one message: 65535 would fit the count, but a
	// message is redelivered whole, so it stays small.
	maxBatch = MaxPublishBatch

	singleContentType = "application/x-skidata-ride-v1"
	batchContentType  = "application/x-skidata-rides-v2"
)

func putRecord(b []byte, r domain.LiftRide) {
	binary.BigEndian.PutUint32(b[0:], uint32(r.ResortID()))
	copy(b[4:8], r.SeasonID().String())
	binary.BigEndian.PutUint16(b[8:], uint16(r.DayID().Number()))
	binary.BigEndian.PutUint32(b[10:], uint32(r.SkierID()))
	binary.BigEndian.PutUint32(b[14:], uint32(r.Time()))
	binary.BigEndian.PutUint32(b[18:], uint32(r.LiftID()))
}

// readRecord validates the ride through the domain's constructors, so a
// corrupt or foreign record is recognised as poison rather than stored.
func readRecord(b []byte) (domain.LiftRide, error) {
	season, err := domain.ParseSeason(string(b[4:8]))
	if err != nil {
		return domain.LiftRide{}, fmt.Errorf("ride record holds an invalid ride: %w", err)
	}
	day, err := domain.NewDay(int(binary.BigEndian.Uint16(b[8:])))
	if err != nil {
		return domain.LiftRide{}, fmt.Errorf("ride record holds an invalid ride: %w", err)
	}
	r, err := domain.NewLiftRide(
		domain.ResortID(binary.BigEndian.Uint32(b[0:])),
		season,
		day,
		domain.SkierID(binary.BigEndian.Uint32(b[10:])),
		int32(binary.BigEndian.Uint32(b[14:])),
		int32(binary.BigEndian.Uint32(b[18:])),
	)
	if err != nil {
		return domain.LiftRide{}, fmt.Errorf("ride record holds an invalid ride: %w", err)
	}
	return r, nil
}

// encodeRide is the version-1 body of one ride.
func encodeRide(r domain.LiftRide) []byte {
	b := make([]byte, singleLen)
	b[0] = singleVersion
	putRecord(b[1:], r)
	return b
}

// encodeBatch is the version-2 body of 1..maxBatch rides.
func encodeBatch(rides []domain.LiftRide) []byte {
	b := make([]byte, batchHeader+recordLen*len(rides))
	b[0] = batchVersion
	binary.BigEndian.PutUint16(b[1:], uint16(len(rides)))
	for i, r := range rides {
		putRecord(b[batchHeader+i*recordLen:], r)
	}
	return b
}

// decodedBody is a body read back: its rides, and the raw records of any
// that did not validate (each dead-lettered alone, as a version-1 body).
type decodedBody struct {
	rides []domain.LiftRide
	bad   [][]byte // version-1 bodies of the invalid records
	errs  []error  // why each bad record is invalid
}

// decodeBody reads a version-1 or version-2 body. An error means the body
// as a whole is unreadable (unknown version, wrong length): it is poison.
func decodeBody(b []byte) (decodedBody, error) {
	var d decodedBody
	if len(b) == 0 {
		return d, fmt.Errorf("empty body")
	}
	var records []byte
	switch b[0] {
	case singleVersion:
		if len(b) != singleLen {
			return d, fmt.Errorf("not a version-%d ride body (%d bytes; want %d)", singleVersion, len(b), singleLen)
		}
		records = b[1:]
	case batchVersion:
		if len(b) < batchHeader {
			return d, fmt.Errorf("version-%d batch body too short (%d bytes)", batchVersion, len(b))
		}
		n := int(binary.BigEndian.Uint16(b[1:]))
		if n == 0 || len(b) != batchHeader+n*recordLen {
			return d, fmt.Errorf("version-%d batch body of %d bytes does not hold the %d rides it announces", batchVersion, len(b), n)
		}
		records = b[batchHeader:]
	default:
		return d, fmt.Errorf("unknown ride body version %d (%d bytes)", b[0], len(b))
	}
	for off := 0; off < len(records); off += recordLen {
		rec := records[off : off+recordLen]
		r, err := readRecord(rec)
		if err != nil {
			d.bad = append(d.bad, append([]byte{singleVersion}, rec...))
			d.errs = append(d.errs, err)
			continue
		}
		d.rides = append(d.rides, r)
	}
	if b[0] == singleVersion && len(d.errs) > 0 {
		// A single ride that does not validate is the whole body.
		return decodedBody{}, d.errs[0]
	}
	return d, nil
}

// decodeRide reads a body that must hold exactly one valid ride.
func decodeRide(b []byte) (domain.LiftRide, error) {
	d, err := decodeBody(b)
	if err != nil {
		return domain.LiftRide{}, err
	}
	if len(d.rides) != 1 || len(d.bad) != 0 {
		return domain.LiftRide{}, fmt.Errorf("body holds %d valid and %d invalid rides; want one", len(d.rides), len(d.bad))
	}
	return d.rides[0], nil
}

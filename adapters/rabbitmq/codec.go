package rabbitmq

import (
	"encoding/binary"
	"fmt"

	"github.com/skidata/skidata/domain"
)

// The message body is a fixed 23-byte record: compact (a JSON ride is ~100
// bytes) and versioned by its first byte so the format can change without
// misreading old messages.
//
//	0      version (1)
//	1..4   resortID  int32 big-endian
//	5..8   seasonID  four ASCII digits
//	9..10  dayID     uint16
//	11..14 skierID   int32
//	15..18 time      int32
//	19..22 liftID    int32
const (
	bodyVersion = 1
	bodyLen     = 23
	contentType = "application/x-skidata-ride-v1"
)

func encodeRide(r domain.LiftRide) []byte {
	b := make([]byte, bodyLen)
	b[0] = bodyVersion
	binary.BigEndian.PutUint32(b[1:], uint32(r.ResortID()))
	copy(b[5:9], r.SeasonID())
	binary.BigEndian.PutUint16(b[9:], uint16(r.DayID()))
	binary.BigEndian.PutUint32(b[11:], uint32(r.SkierID()))
	binary.BigEndian.PutUint32(b[15:], uint32(r.Time()))
	binary.BigEndian.PutUint32(b[19:], uint32(r.LiftID()))
	return b
}

// decodeRide reads a body and validates the ride, so a corrupt or foreign
// message is recognised as poison rather than stored.
func decodeRide(b []byte) (domain.LiftRide, error) {
	if len(b) != bodyLen || b[0] != bodyVersion {
		return domain.LiftRide{}, fmt.Errorf("not a version-%d ride body (%d bytes)", bodyVersion, len(b))
	}
	r, err := domain.NewLiftRide(
		domain.ResortID(binary.BigEndian.Uint32(b[1:])),
		string(b[5:9]),
		int(binary.BigEndian.Uint16(b[9:])),
		domain.SkierID(binary.BigEndian.Uint32(b[11:])),
		int32(binary.BigEndian.Uint32(b[15:])),
		int32(binary.BigEndian.Uint32(b[19:])),
	)
	if err != nil {
		return domain.LiftRide{}, fmt.Errorf("ride body holds an invalid ride: %w", err)
	}
	return r, nil
}

package rabbitmq

import (
	"testing"

	"github.com/skidata/skidata/domain"
)

func TestBatchBodyRoundTripsEveryRide(t *testing.T) {
	rides := []domain.LiftRide{
		domain.MustLiftRide(1, "2024", 1, 7, 0, 1),
		domain.MustLiftRide(2147483647, "9999", 366, 2147483647, 359, 40),
		domain.MustLiftRide(3, "2025", 20, 12, 100, 5),
	}
	d, err := decodeBody(encodeBatch(rides))
	if err != nil || len(d.bad) != 0 {
		t.Fatalf("decodeBody(encodeBatch) = %v, %d bad; want no error", err, len(d.bad))
	}
	if len(d.rides) != len(rides) {
		t.Fatalf("decoded %d rides; want %d", len(d.rides), len(rides))
	}
	for i := range rides {
		if d.rides[i] != rides[i] {
			t.Errorf("ride %d = %v; want %v", i, d.rides[i], rides[i])
		}
	}
}

// TestVersion1BodyIsStillRead: messages queued or dead-lettered by a release
// that wrote one ride per message are still consumed and replayed.
func TestVersion1BodyIsStillRead(t *testing.T) {
	r := domain.MustLiftRide(4, "2024", 2, 99, 10, 3)
	got, err := decodeRide(encodeRide(r))
	if err != nil || got != r {
		t.Fatalf("decodeRide(encodeRide(%v)) = %v, %v", r, got, err)
	}
}

// TestBatchWithAnInvalidRecordKeepsTheGoodRides: one corrupt record in a
// batch is split out (as a version-1 body of its own, for the dead-letter
// queue), and the other rides are still read.
func TestBatchWithAnInvalidRecordKeepsTheGoodRides(t *testing.T) {
	rides := []domain.LiftRide{domain.MustLiftRide(1, "2024", 1, 7, 0, 1), domain.MustLiftRide(1, "2024", 1, 8, 0, 1)}
	body := encodeBatch(rides)
	copy(body[batchHeader+recordLen+4:], "20x4") // the second ride's season
	d, err := decodeBody(body)
	if err != nil {
		t.Fatalf("decodeBody: %v; want the batch read with one bad record", err)
	}
	if len(d.rides) != 1 || d.rides[0] != rides[0] || len(d.bad) != 1 {
		t.Fatalf("decoded %v with %d bad records; want [%v] and 1 bad", d.rides, len(d.bad), rides[0])
	}
	if _, err := decodeRide(d.bad[0]); err == nil || len(d.bad[0]) != singleLen {
		t.Errorf("the bad record's own body (%d bytes) decodes without error; want a %d-byte body that fails", len(d.bad[0]), singleLen)
	}
}

func TestUnreadableBodiesAreErrors(t *testing.T) {
	good := encodeBatch([]domain.LiftRide{domain.MustLiftRide(1, "2024", 1, 7, 0, 1)})
	for name, b := range map[string][]byte{
		"empty":           {},
		"json":            []byte(`{"not":"a ride"}`),
		"unknown version": append([]byte{9}, good[1:]...),
		"short batch":     good[:len(good)-1],
		"zero count":      {batchVersion, 0, 0},
		"count too big":   append([]byte{batchVersion, 0, 2}, good[batchHeader:]...),
		"short v1":        encodeRide(domain.MustLiftRide(1, "2024", 1, 7, 0, 1))[:singleLen-1],
	} {
		if _, err := decodeBody(b); err == nil {
			t.Errorf("%s: decodeBody accepted %x", name, b)
		}
	}
}

func FuzzDecodeBodyNeverPanics(f *testing.F) {
	f.Add(encodeBatch([]domain.LiftRide{domain.MustLiftRide(1, "2024", 1, 7, 0, 1)}))
	f.Add(encodeRide(domain.MustLiftRide(1, "2024", 1, 7, 0, 1)))
	f.Add([]byte{batchVersion, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := decodeBody(b)
		if err != nil {
			return
		}
		// Whatever was read re-encodes to records of the same rides.
		if len(d.rides) > 0 {
			again, err := decodeBody(encodeBatch(d.rides))
			if err != nil || len(again.rides) != len(d.rides) {
				t.Fatalf("re-encoding %d decoded rides: %v", len(d.rides), err)
			}
		}
	})
}

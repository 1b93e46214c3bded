package nemesis

import (
	"math/rand/v2"
	"time"

	"github.com/Shopify/toxiproxy/v2/stream"
	"github.com/Shopify/toxiproxy/v2/toxics"
)

// The two toxics of the nemesis's own, registered with toxiproxy as its
// guide to creating toxics (in the toxiproxy repository) has custom
// toxics registered.
//
// Why not toxiproxy's latency toxic, held for the whole fault to make a
// partition, and set to the drawn latency for a slow link: it buffers up
// to 1024 chunks, and removing it hangs while a connection through it
// dies at that moment (Shopify/toxiproxy#558, open): the removal holds
// the proxy's toxic lock while it forwards the buffered chunks, five
// seconds' wait each, to a writer that has stopped reading, which is
// itself waiting for that lock to deregister its connection. A nemesis
// run hung there for minutes (TestHealReturnsWhileAConnectionThroughTheFaultDies
// fails with it). These two take one chunk at a time (their input
// channel is unbuffered) and never wait on a writer without also
// watching for the removal, so a removal waits on two chunks at most (the
// one in hand, the one the chain hands on) and a few seconds. The bytes
// they do not take wait in the proxy's socket buffers and the sender's,
// as TCP's flow control keeps them.
const (
	holdToxicType = "nemesis_hold"
	slowToxicType = "nemesis_slow"
)

func init() {
	toxics.Register(holdToxicType, new(holdToxic))
	toxics.Register(slowToxicType, new(slowToxic))
}

// holdToxic passes nothing until it is removed; then what waited flows
// on, in order.
type holdToxic struct{}

func (*holdToxic) Pipe(stub *toxics.ToxicStub) { <-stub.Interrupt }

// slowToxic passes each chunk once Latency ± Jitter has passed since the
// proxy read it. Bytes that arrive while it waits wait too, and are read
// as a later chunk: a byte is delayed between one and two latencies.
type slowToxic struct {
	Latency int64 `json:"latency"` // milliseconds
	Jitter  int64 `json:"jitter"`  // milliseconds
}

// slowState is a connection's chunk in hand when the toxic is
// interrupted: the next Pipe, or the removal, passes it on.
type slowState struct{ inHand *stream.StreamChunk }

func (t *slowToxic) NewState() any { return new(slowState) }

func (t *slowToxic) Pipe(stub *toxics.ToxicStub) {
	st := stub.State.(*slowState)
	for {
		c := st.inHand
		st.inHand = nil
		if c == nil {
			select {
			case <-stub.Interrupt:
				return
			case c = <-stub.Input:
			}
		}
		if c == nil {
			stub.Close()
			return
		}
		d := time.Duration(t.Latency) * time.Millisecond
		if t.Jitter > 0 {
			d += time.Duration(rand.Int64N(2*t.Jitter+1)-t.Jitter) * time.Millisecond
		}
		wait := time.NewTimer(time.Until(c.Timestamp.Add(d)))
		select {
		case <-wait.C:
		case <-stub.Interrupt:
			wait.Stop()
			st.inHand = c
			return
		}
		select {
		case stub.Output <- c:
		case <-stub.Interrupt:
			st.inHand = c
			return
		}
	}
}

// Cleanup passes the chunk in hand on as the toxic is removed. A writer
// that does not take it within five seconds has stopped reading (its
// peer is gone, or frozen with full buffers): the connection is closed
// rather than the chunk dropped, as a stream with a hole in it would be
// no TCP connection.
func (t *slowToxic) Cleanup(stub *toxics.ToxicStub) {
	st := stub.State.(*slowState)
	if st.inHand == nil {
		return
	}
	if err := stub.WriteOutput(st.inHand, 5*time.Second); err != nil {
		stub.Close()
	}
	st.inHand = nil
}

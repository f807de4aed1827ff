package metarpc_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/protobuf/proto"

	"tessera/internal/meta"
	"tessera/internal/meta/metarpc"
	pb "tessera/internal/meta/metarpc/metapb"
)

// TestRepliesChargedUntilWritten: a peer that never opens its receive
// window leaves its replies queued on the server after its calls ended;
// they are charged to its byte budget until written, and given back once
// it reads them. Before, a call's charge ended with its status queued:
// 16 replies of 60 KiB sat on the server charged nothing.
func TestRepliesChargedUntilWritten(t *testing.T) {
	ctx := context.Background()
	probe := &metarpc.BudgetProbe{}
	addr, _ := serveOpts(t, newService(t), metarpc.ServeOptions{}.ProbeBudgets(probe))
	good := dial(t, addr)
	const size, n = 60 << 10, 16
	if err := good.SetXattr(ctx, meta.RootIno, "user.big", bytes.Repeat([]byte("v"), size), 0); err != nil {
		t.Fatal(err)
	}
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, http2.ClientPreface)
	fr := http2.NewFramer(c, nil) // writes: the test's, and the reader's acks under wmu
	var wmu sync.Mutex
	rd := http2.NewFramer(nil, c)
	rd.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0}) // no reply data may come
	req, _ := proto.Marshal(&pb.XattrRequest{Ino: uint64(meta.RootIno), Name: "user.big"})
	msg := append([]byte{0, 0, 0, 0, byte(len(req))}, req...)
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for i := range n {
		hb.Reset()
		for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", pb.FSService_GetXattr_FullMethodName},
			{":authority", addr}, {"content-type", "application/grpc"}, {"te", "trailers"}, {"tessera-protocol", "2"}} {
			enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
		}
		id := uint32(2*i + 1)
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hb.Bytes(), EndHeaders: true})
		fr.WriteData(id, true, msg)
	}
	// Read the server's frames (settings, headers) as they come, without
	// opening any window, in the background.
	ended := make(chan uint32, n)
	go func() { // started after the test's first writes
		for {
			f, err := rd.ReadFrame()
			if err != nil {
				return
			}
			switch f := f.(type) {
			case *http2.SettingsFrame:
				if !f.IsAck() {
					wmu.Lock()
					fr.WriteSettingsAck()
					wmu.Unlock()
				}
			case *http2.MetaHeadersFrame:
				if f.StreamEnded() {
					ended <- f.StreamID
				}
			}
		}
	}()
	for i := 0; ; i++ { // a minute is a hang
		if u := probe.Use("127.0.0.2"); u.Streams == 0 && u.Bytes >= n*size-4<<10 { // less what the headers written paid
			t.Logf("replies queued: %+v", u)
			break
		}
		if i == 600 {
			t.Fatalf("16 replies of %d bytes queued, the peer's budget holds %+v", size, probe.Use("127.0.0.2"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The peer reads: the replies go, and so does their charge.
	wmu.Lock()
	fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 20})
	fr.WriteWindowUpdate(0, 16<<20)
	wmu.Unlock()
	for range n {
		select {
		case <-ended:
		case <-time.After(time.Minute):
			t.Fatal("replies not sent after the window opened")
		}
	}
	for i := 0; probe.Use("127.0.0.2") != (metarpc.BudgetUse{}); i++ {
		if i == 600 {
			t.Fatalf("after the replies were read, the peer's budget holds %+v", probe.Use("127.0.0.2"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

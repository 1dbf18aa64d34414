// Command oldtrace records an old-format (Go 1.19-1.21) execution trace of a busy little
// service for the benchmark's comparison with `go tool trace`: goroutines exchanging requests
// over loopback TCP and channels, allocating, sleeping and writing to a file, until the trace
// reaches the requested size.
//
// Usage: go run . -o FILE [-size BYTES]
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"runtime/trace"
	"sync"
	"sync/atomic"
	"time"
)

var sink atomic.Int64

// work allocates and computes so that the trace has heap and GC activity.
func work(n int) int {
	buf := make([][]byte, 0, 16)
	s := 0
	for i := 0; i < n; i++ {
		b := make([]byte, 64+i%512)
		b[0] = byte(i)
		buf = append(buf, b)
		if len(buf) == cap(buf) {
			buf = buf[:0]
		}
		s += int(b[0])
	}
	return s
}

func server(ln net.Listener, jobs chan<- chan int) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func(c net.Conn) {
			defer c.Close()
			r := bufio.NewReader(c)
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					return
				}
				reply := make(chan int)
				jobs <- reply
				n := <-reply + len(line)
				fmt.Fprintf(c, "%d\n", n)
			}
		}(c)
	}
}

func main() {
	out := flag.String("o", "old.trace", "trace file to write")
	size := flag.Int64("size", 110<<20, "stop when the trace is at least this many bytes")
	flag.Parse()

	f, err := os.Create(*out)
	if err != nil {
		log.Fatal(err)
	}
	if err := trace.Start(f); err != nil {
		log.Fatal(err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	jobs := make(chan chan int, 64)
	for i := 0; i < 16; i++ { // worker pool
		go func() {
			for reply := range jobs {
				reply <- work(200)
			}
		}()
	}
	go server(ln, jobs)

	var stop atomic.Bool
	var wg sync.WaitGroup
	for i := 0; i < 64; i++ { // clients
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				return
			}
			defer c.Close()
			r := bufio.NewReader(c)
			for !stop.Load() {
				fmt.Fprintf(c, "req %d\n", i)
				line, err := r.ReadString('\n')
				if err != nil {
					return
				}
				sink.Add(int64(len(line)))
				if i%8 == 0 {
					time.Sleep(50 * time.Microsecond)
				}
			}
		}(i)
	}
	for i := 0; i < 32; i++ { // channel ping-pong pairs: scheduler events in bulk
		ping, pong := make(chan int), make(chan int)
		go func() {
			for v := range ping {
				pong <- v + work(8)
			}
		}()
		go func() {
			for v := 0; !stop.Load(); v++ {
				ping <- v
				<-pong
			}
			close(ping)
		}()
	}
	go func() { // a log writer doing syscalls
		lf, err := os.CreateTemp("", "oldtrace-log")
		if err != nil {
			return
		}
		defer os.Remove(lf.Name())
		defer lf.Close()
		for !stop.Load() {
			io.WriteString(lf, "tick\n")
			time.Sleep(200 * time.Microsecond)
		}
	}()

	for {
		time.Sleep(100 * time.Millisecond)
		if st, err := f.Stat(); err == nil && st.Size() >= *size {
			break
		}
	}
	stop.Store(true)
	ln.Close()
	wg.Wait()
	trace.Stop()
	if err := f.Close(); err != nil {
		log.Fatal(err)
	}
}

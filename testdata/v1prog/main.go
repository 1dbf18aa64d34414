// Command v1prog records execution traces of a few workloads, one trace per scenario, into the
// directory named by its first argument. Built with Go 1.11-1.21 it writes the old trace format
// ("go 1.19 trace" with Go 1.19 and 1.20) that traceidx converts to the v2 event model;
// tests/corpus/v1_record_test.sh runs it and reads every trace back with traceidx.
//
// Usage: go run main.go OUTDIR [SCENARIO...]
package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"runtime/trace"
	"sync"
	"syscall"
	"time"
)

type scenario struct {
	name string
	cpu  bool // also run the CPU profiler, which puts CPU samples into the trace
	run  func() error
}

var scenarios = []scenario{
	{"sched", false, schedChurn},
	{"syscall", false, blockingSyscalls},
	{"net", false, networkWaits},
	{"gc", false, gcPressure},
	{"annotations", false, annotations},
	{"cpuprof", true, cpuProfile},
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: v1prog OUTDIR [SCENARIO...]")
		os.Exit(2)
	}
	want := map[string]bool{}
	for _, n := range os.Args[2:] {
		want[n] = true
	}
	for _, s := range scenarios {
		if len(want) > 0 && !want[s.name] {
			continue
		}
		path := filepath.Join(os.Args[1], s.name+".trace")
		if err := record(path, s); err != nil {
			fmt.Fprintf(os.Stderr, "v1prog: %s: %v\n", s.name, err)
			os.Exit(1)
		}
		fmt.Println(path)
	}
}

func record(path string, s scenario) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if s.cpu {
		// The profile itself is not needed: only the samples the tracer copies into the trace.
		var prof bytes.Buffer
		if err := pprof.StartCPUProfile(&prof); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if err := trace.Start(f); err != nil {
		return err
	}
	runErr := s.run()
	trace.Stop()
	if runErr != nil {
		return runErr
	}
	return f.Close()
}

// burn keeps a CPU busy for d.
func burn(d time.Duration) int {
	n := 0
	for start := time.Now(); time.Since(start) < d; n++ {
	}
	return n
}

// schedChurn: many short goroutines contending on a mutex and a condition variable, channel
// hand-offs, Gosched, sleeps, a goroutine parked forever, preemption, and GOMAXPROCS changes.
func schedChurn() error {
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		cond    = sync.NewCond(&mu)
		turn    int
		counter int
		ch      = make(chan int)
		done    = make(chan struct{})
	)
	go func() {
		for {
			select {
			case <-ch:
			case <-done:
				return
			}
		}
	}()
	for i := 0; i < 64; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for j := 0; j < 40; j++ {
				mu.Lock()
				counter++
				mu.Unlock()
				if j%5 == 0 {
					runtime.Gosched()
				}
				select {
				case ch <- j:
				default:
				}
			}
		}(i)
	}
	// Two goroutines taking turns through a condition variable.
	for id := 0; id < 2; id++ {
		wg.Add(1)
		go func(id int) {
			defer wg.Done()
			for k := 0; k < 20; k++ {
				mu.Lock()
				for turn%2 != id {
					cond.Wait()
				}
				turn++
				cond.Broadcast()
				mu.Unlock()
			}
		}(id)
	}
	wg.Wait()
	close(done)
	go func() { select {} }() // blocked forever
	time.Sleep(time.Millisecond)
	// More busy goroutines than Ps, longer than the 10 ms preemption slice.
	procs := runtime.GOMAXPROCS(0)
	for i := 0; i < procs+1; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			burn(25 * time.Millisecond)
		}()
	}
	wg.Wait()
	runtime.GOMAXPROCS(1)
	time.Sleep(time.Millisecond)
	runtime.GOMAXPROCS(procs)
	if counter != 64*40 {
		return fmt.Errorf("counter %d", counter)
	}
	return nil
}

// blockingSyscalls: reads that block in the kernel (losing the P), sleeps in the kernel, and
// ordinary file I/O.
func blockingSyscalls() error {
	var fds [2]int
	if err := syscall.Pipe(fds[:]); err != nil { // blocking descriptors, not netpolled
		return err
	}
	defer syscall.Close(fds[0])
	defer syscall.Close(fds[1])
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 1)
			syscall.Read(fds[0], buf)
		}()
	}
	time.Sleep(5 * time.Millisecond)
	for i := 0; i < 3; i++ {
		syscall.Write(fds[1], []byte{1})
		time.Sleep(time.Millisecond)
	}
	wg.Wait()
	ts := syscall.NsecToTimespec(int64(2 * time.Millisecond))
	for i := 0; i < 5; i++ {
		syscall.Nanosleep(&ts, nil)
	}
	dir, err := os.MkdirTemp("", "v1prog")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	data := make([]byte, 64<<10)
	for i := 0; i < 20; i++ {
		p := filepath.Join(dir, fmt.Sprint(i))
		if err := os.WriteFile(p, data, 0o600); err != nil {
			return err
		}
		if _, err := os.ReadFile(p); err != nil {
			return err
		}
	}
	return nil
}

// networkWaits: an echo server on loopback and clients that wait on the network poller.
func networkWaits() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func(c net.Conn) {
				io.Copy(c, c)
				c.Close()
			}(c)
		}
	}()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			buf := make([]byte, 512)
			for j := 0; j < 20; j++ {
				if _, err := c.Write(buf); err != nil {
					errs <- err
					return
				}
				if _, err := io.ReadFull(c, buf); err != nil {
					errs <- err
					return
				}
				time.Sleep(200 * time.Microsecond)
			}
		}()
	}
	wg.Wait()
	ln.Close()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

type node struct {
	next *node
	pad  [48]byte
}

// gcPressure: a low GC target with concurrent allocators (GC cycles, sweeping, mark assists),
// then a forced collection.
func gcPressure() error {
	old := debug.SetGCPercent(10)
	defer debug.SetGCPercent(old)
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var keep [][]byte
			var list *node
			for i := 0; i < 1000; i++ {
				keep = append(keep, make([]byte, 16<<10))
				if len(keep) > 32 {
					keep = keep[1:]
				}
				for k := 0; k < 20; k++ {
					list = &node{next: list}
				}
				if i%250 == 0 {
					list = nil
				}
			}
			runtime.KeepAlive(keep)
			runtime.KeepAlive(list)
		}()
	}
	wg.Wait()
	runtime.GC()
	return nil
}

// annotations: nested tasks, regions and logs, including messages that need quoting.
func annotations() error {
	ctx, task := trace.NewTask(context.Background(), "main task")
	trace.Log(ctx, "phase", "setup")
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			sctx, sub := trace.NewTask(ctx, "subtask")
			defer sub.End()
			trace.WithRegion(sctx, "outer", func() {
				r := trace.StartRegion(sctx, "inner")
				trace.Logf(sctx, "item", "n=%d \"quoted\" é\t", i)
				burn(500 * time.Microsecond)
				r.End()
			})
		}(i)
	}
	wg.Wait()
	trace.Log(ctx, "", "empty category")
	trace.Log(context.Background(), "background", "no task")
	task.End()
	return nil
}

// cpuProfile: busy goroutines while the profiler runs, so the trace holds CPU samples.
func cpuProfile() error {
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			burn(60 * time.Millisecond)
		}()
	}
	wg.Wait()
	return nil
}

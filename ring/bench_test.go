// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package ring

import (
	"fmt"
	"sync"
	"testing"
)

// benchCapacity is the ring and channel capacity in the transfer benchmarks.
const benchCapacity = 1024

// BenchmarkTransfer moves b.N items from producers to consumers through a
// ring in bursts, and through a buffered channel of the same capacity one
// item at a time (a channel has no burst operation), in the same run. The
// ns/item metric is the wall time per item moved.
func BenchmarkTransfer(b *testing.B) {
	for _, shape := range []struct{ producers, consumers int }{{1, 1}, {2, 1}, {2, 2}} {
		name := fmt.Sprintf("%dx%d", shape.producers, shape.consumers)
		b.Run("chan/"+name, func(b *testing.B) {
			benchChannel(b, shape.producers, shape.consumers)
		})
		for _, burst := range []int{1, 32, 128} {
			if shape.producers == 1 && shape.consumers == 1 {
				b.Run(fmt.Sprintf("SPSC/%s/burst=%d", name, burst), func(b *testing.B) {
					benchRing(b, NewSPSC[int](benchCapacity), 1, 1, burst)
				})
			}
			b.Run(fmt.Sprintf("MPMC/%s/burst=%d", name, burst), func(b *testing.B) {
				benchRing(b, NewMPMC[int](benchCapacity), shape.producers, shape.consumers, burst)
			})
		}
	}
}

func benchRing(b *testing.B, q queue[int], producers, consumers, burst int) {
	b.ReportAllocs()
	var wg sync.WaitGroup
	var consumersDone sync.WaitGroup
	for range consumers {
		consumersDone.Go(func() {
			out := make([]int, burst)
			for {
				if _, err := q.Dequeue(out); err != nil {
					return
				}
			}
		})
	}
	b.ResetTimer()
	for p := range producers {
		items := share(b.N, producers, p)
		wg.Go(func() {
			in := make([]int, burst)
			for i := 0; i < items; i += burst {
				if err := q.Enqueue(in[:min(burst, items-i)]); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	q.Close()
	consumersDone.Wait()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/item")
}

func benchChannel(b *testing.B, producers, consumers int) {
	b.ReportAllocs()
	ch := make(chan int, benchCapacity)
	var wg sync.WaitGroup
	var consumersDone sync.WaitGroup
	for range consumers {
		consumersDone.Go(func() {
			for range ch {
			}
		})
	}
	b.ResetTimer()
	for p := range producers {
		items := share(b.N, producers, p)
		wg.Go(func() {
			for i := range items {
				ch <- i
			}
		})
	}
	wg.Wait()
	close(ch)
	consumersDone.Wait()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/item")
}

// share returns how many of n items worker i of workers moves.
func share(n, workers, i int) int {
	s := n / workers
	if i < n%workers {
		s++
	}
	return s
}

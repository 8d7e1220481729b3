module github.com/wirebatch/wirebatch/bench/ipsecmb

go 1.26.0

replace github.com/wirebatch/wirebatch => ../..

require github.com/wirebatch/wirebatch v0.0.0-00010101000000-000000000000

require (
	golang.org/x/crypto v0.59.0 // indirect
	golang.org/x/sys v0.50.0
)

package main

import (
	"testing"

	"go.uber.org/goleak"
)

// The flag and config checks build every cluster's client (collector.Check)
// and must close all of it.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

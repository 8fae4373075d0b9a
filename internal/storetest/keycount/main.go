// Command keycount opens a stopped server's meta store (a Badger DB
// directory) and prints, for each hex-encoded key prefix given, how many
// live keys start with it: "prefix count" per line. internal/storetest
// runs it for tests that may import only the standard library.
package main

import (
	"encoding/hex"
	"fmt"
	"os"

	"github.com/dgraph-io/badger/v4"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: keycount DIR HEXPREFIX...")
		os.Exit(2)
	}
	db, err := badger.Open(badger.DefaultOptions(os.Args[1]).WithLogger(nil))
	if err != nil {
		fmt.Fprintln(os.Stderr, "keycount:", err)
		os.Exit(1)
	}
	defer db.Close()
	for _, h := range os.Args[2:] {
		prefix, err := hex.DecodeString(h)
		if err != nil {
			fmt.Fprintln(os.Stderr, "keycount: prefix:", err)
			os.Exit(2)
		}
		n := 0
		err = db.View(func(txn *badger.Txn) error {
			opts := badger.DefaultIteratorOptions
			opts.Prefix, opts.PrefetchValues = prefix, false
			it := txn.NewIterator(opts)
			defer it.Close()
			for it.Rewind(); it.Valid(); it.Next() {
				n++
			}
			return nil
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, "keycount:", err)
			os.Exit(1)
		}
		fmt.Println(h, n)
	}
}

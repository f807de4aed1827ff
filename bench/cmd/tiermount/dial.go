package main

import "tessera/internal/meta/metarpc"

func dialMeta(addr string) (*metarpc.Client, error) { return metarpc.Dial(addr, metarpc.DialOptions{}) }

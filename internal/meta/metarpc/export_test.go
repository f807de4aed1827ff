package metarpc

// SpeakProtocol makes a server (or client) of another protocol version,
// for the handshake's tests.
func (o ServeOptions) SpeakProtocol(v int) ServeOptions { o.protocol = v; return o }

// SpeakProtocol makes a client of another protocol version.
func (o DialOptions) SpeakProtocol(v int) DialOptions { o.protocol = v; return o }

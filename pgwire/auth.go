package pgwire

import (
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/xdg-go/scram"
)

// scramIterations is the PBKDF2 iteration count of the stored credential,
// PostgreSQL's default (scram_iterations).
const scramIterations = 4096

// maxAuthMessage bounds a message of the password exchange, which comes
// before the client is known: PostgreSQL's PG_MAX_AUTH_TOKEN_LENGTH.
const maxAuthMessage = 65535

const (
	mechSCRAM     = "SCRAM-SHA-256"
	mechSCRAMPlus = "SCRAM-SHA-256-PLUS"
)

// auth is the password check of a server with a token: the SCRAM
// credential derived from the token once (salt random per server start),
// and the channel binding data of the server's certificate.
type auth struct {
	token string
	scram *scram.Server
	// endpoint is tls-server-end-point of the one certificate of
	// Options.TLS (RFC 5929); unset when there is none or several (then
	// SCRAM-SHA-256-PLUS is not offered).
	endpoint scram.ChannelBinding
	// cleartext: over TLS, ask for the password in cleartext instead of
	// SCRAM (Options.CleartextPassword).
	cleartext bool
}

// newAuth derives the credential of opts.Token; nil without a token.
func newAuth(opts Options) (*auth, error) {
	if opts.Token == "" {
		return nil, nil
	}
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return nil, fmt.Errorf("pgwire: a salt for the SCRAM credential: %w", err)
	}
	// SASLprep of the token as libpq and PostgreSQL do it; a token it
	// refuses is used as it is, as PostgreSQL does.
	client, err := scram.SHA256.NewClient("", opts.Token, "")
	if err != nil {
		if client, err = scram.SHA256.NewClientUnprepped("", opts.Token, ""); err != nil {
			return nil, fmt.Errorf("pgwire: the SCRAM credential of the token: %w", err)
		}
	}
	cred, err := client.GetStoredCredentialsWithError(scram.KeyFactors{Salt: string(salt), Iters: scramIterations})
	if err != nil {
		return nil, fmt.Errorf("pgwire: the SCRAM credential of the token: %w", err)
	}
	// Every user has the one credential: the user name of a SCRAM
	// message is ignored (libpq sends an empty one, the startup message
	// names the user).
	srv, err := scram.SHA256.NewServer(func(string) (scram.StoredCredentials, error) { return cred, nil })
	if err != nil {
		return nil, fmt.Errorf("pgwire: a SCRAM server: %w", err)
	}
	a := &auth{token: opts.Token, scram: srv, cleartext: opts.CleartextPassword}
	if opts.TLS != nil && opts.TLS.GetCertificate == nil && len(opts.TLS.Certificates) == 1 && len(opts.TLS.Certificates[0].Certificate) > 0 {
		leaf := opts.TLS.Certificates[0].Leaf
		if leaf == nil {
			if leaf, err = x509.ParseCertificate(opts.TLS.Certificates[0].Certificate[0]); err != nil {
				return nil, fmt.Errorf("pgwire: the TLS certificate: %w", err)
			}
		}
		// The library hashes the peer's certificate of a client's
		// connection state; the server's own is the same hash.
		if cb, err := scram.NewTLSServerEndpointBinding(&tls.ConnectionState{PeerCertificates: []*x509.Certificate{leaf}}); err == nil {
			a.endpoint = cb
		}
	}
	return a, nil
}

// authenticate asks for the password of user when the server has a
// token: SCRAM-SHA-256 (with -PLUS over TLS), or cleartext over TLS when
// so configured. A wrong password is a FATAL 28P01, a broken exchange
// 08P01; either closes the connection.
func (c *conn) authenticate(user string, overTLS bool) error {
	a := c.s.auth
	if a == nil {
		return nil
	}
	c.be.SetMaxBodyLen(maxAuthMessage)
	defer c.be.SetMaxBodyLen(c.s.opts.MaxMessage)
	if overTLS && a.cleartext {
		return c.cleartextPassword(a, user)
	}
	return c.scramExchange(a, user, overTLS)
}

func (c *conn) wrongPassword(user string) error {
	return c.fatal("28P01", "password authentication failed for user %q (the password is the server's --token)", user)
}

// receiveAuth reads the next message of the exchange, of authType's kind.
func (c *conn) receiveAuth(authType uint32) (pgproto3.FrontendMessage, error) {
	if err := c.be.Flush(); err != nil {
		return nil, err
	}
	c.be.SetAuthType(authType)
	msg, err := c.be.Receive()
	if err != nil {
		var tooBig *pgproto3.ExceededMaxBodyLenErr
		var ne net.Error
		switch {
		case errors.As(err, &tooBig):
			return nil, c.fatal("08P01", "authentication message of %d bytes is over the limit of %d bytes", tooBig.ActualBodyLen, tooBig.MaxExpectedBodyLen)
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed), errors.As(err, &ne):
			return nil, err
		}
		// A message that does not decode, or of an unknown type.
		return nil, c.fatal("08P01", "invalid authentication message: %v", err)
	}
	return msg, nil
}

func (c *conn) cleartextPassword(a *auth, user string) error {
	c.be.Send(&pgproto3.AuthenticationCleartextPassword{})
	msg, err := c.receiveAuth(pgproto3.AuthTypeCleartextPassword)
	if err != nil {
		return err
	}
	pw, ok := msg.(*pgproto3.PasswordMessage)
	if !ok {
		return c.fatal("08P01", "expected a password message, got %s", msgName(msg))
	}
	if subtle.ConstantTimeCompare([]byte(pw.Password), []byte(a.token)) != 1 {
		return c.wrongPassword(user)
	}
	return nil
}

// scramExchange runs SCRAM-SHA-256 (RFC 5802, RFC 7677) as PostgreSQL
// does: AuthenticationSASL, SASLInitialResponse, AuthenticationSASLContinue,
// SASLResponse, AuthenticationSASLFinal. The client proves it knows the
// token without sending it, so this is allowed without TLS.
func (c *conn) scramExchange(a *auth, user string, overTLS bool) error {
	plus := overTLS && a.endpoint.IsSupported()
	mechs := []string{mechSCRAM}
	if plus {
		mechs = []string{mechSCRAMPlus, mechSCRAM}
	}
	c.be.Send(&pgproto3.AuthenticationSASL{AuthMechanisms: mechs})
	msg, err := c.receiveAuth(pgproto3.AuthTypeSASL)
	if err != nil {
		return err
	}
	first, ok := msg.(*pgproto3.SASLInitialResponse)
	if !ok {
		return c.fatal("08P01", "expected a SASLInitialResponse, got %s", msgName(msg))
	}
	// The channel binding flag must agree with the mechanism: "p=" is
	// SCRAM-SHA-256-PLUS and only it (the library checks the rest).
	bound := strings.HasPrefix(string(first.Data), "p=")
	switch {
	case first.AuthMechanism == mechSCRAMPlus && plus:
		if !bound {
			return c.fatal("08P01", "malformed SCRAM message: %s without channel binding", mechSCRAMPlus)
		}
	case first.AuthMechanism == mechSCRAM:
		if bound {
			return c.fatal("08P01", "malformed SCRAM message: channel binding with %s (choose %s)", mechSCRAM, mechSCRAMPlus)
		}
	default:
		return c.fatal("08P01", "the client selected SASL mechanism %q, which this server does not offer (%s)", first.AuthMechanism, strings.Join(mechs, ", "))
	}
	conv := a.scram.NewConversation()
	if plus {
		conv = a.scram.NewConversationWithChannelBinding(a.endpoint)
	}
	s1, err := conv.Step(string(first.Data))
	if err != nil {
		return c.fatal("08P01", "malformed SCRAM message: %v", err)
	}
	c.be.Send(&pgproto3.AuthenticationSASLContinue{Data: []byte(s1)})
	msg, err = c.receiveAuth(pgproto3.AuthTypeSASLContinue)
	if err != nil {
		return err
	}
	final, ok := msg.(*pgproto3.SASLResponse)
	if !ok {
		return c.fatal("08P01", "expected a SASLResponse, got %s", msgName(msg))
	}
	s2, err := conv.Step(string(final.Data))
	switch {
	case err == nil && conv.Valid():
	case s2 == scram.ErrInvalidProof:
		return c.wrongPassword(user)
	case s2 == scram.ErrChannelBindingsDontMatch:
		return c.fatal("08P01", "SCRAM channel binding check failed")
	default:
		return c.fatal("08P01", "invalid SCRAM response: %v", err)
	}
	c.be.Send(&pgproto3.AuthenticationSASLFinal{Data: []byte(s2)})
	return nil
}

// msgName is a message's type for an error: "SASLResponse".
func msgName(msg any) string {
	return strings.TrimPrefix(fmt.Sprintf("%T", msg), "*pgproto3.")
}

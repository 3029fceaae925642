package server

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/pixelflight/pixelflight/internal/clip"
)

// TLSFiles names the PEM files of a TLS server.
type TLSFiles struct {
	Cert, Key string // the server's certificate chain and private key
	ClientCA  string // CA certificates client certificates must chain to; empty: no client certificates asked
}

// LoadTLS reads the files once and returns the server's TLS configuration:
// TLS 1.2 at least (1.3 is chosen whenever the client offers it), and, with
// ClientCA, client certificates required and verified against it (mTLS).
func LoadTLS(f TLSFiles) (*tls.Config, error) {
	if f.Cert == "" || f.Key == "" {
		return nil, errors.New("TLS needs both a certificate and its key")
	}
	cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		return nil, fmt.Errorf("TLS certificate %s, key %s: %w", f.Cert, f.Key, err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if f.ClientCA != "" {
		pool, err := loadPool(f.ClientCA)
		if err != nil {
			return nil, fmt.Errorf("client CA: %w", err)
		}
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// loadPool reads a PEM file of CA certificates.
func loadPool(path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("%s holds no PEM certificate", path)
	}
	return pool, nil
}

// ReadToken reads a bearer token from path: the file's contents with
// surrounding whitespace trimmed. An empty token, or one with characters a
// gRPC header cannot carry (anything but printable ASCII without spaces),
// is an error. loose reports a file that its group or others may read or
// write (mode looser than 0600); serve warns about it but goes on, since
// mounted secrets (Kubernetes' default 0644) often are.
func ReadToken(path string) (token string, loose bool, err error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", false, fmt.Errorf("token file: %w", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", false, fmt.Errorf("token file: %w", err)
	}
	token = strings.TrimSpace(string(b))
	if token == "" {
		return "", false, fmt.Errorf("token file %s is empty", path)
	}
	for _, r := range token {
		if r <= ' ' || r > '~' {
			return "", false, fmt.Errorf("token file %s: the token must be printable ASCII without spaces (as from `openssl rand -hex 32`)", path)
		}
	}
	return token, fi.Mode().Perm()&0o077 != 0, nil
}

// tokenAuth checks that each call carries "authorization: Bearer <token>"
// metadata (Arrow Flight's convention). It covers every service on the
// server, grpc.health.v1 included.
type tokenAuth struct {
	want [sha256.Size]byte // sha256 of the token: compared in constant time whatever the lengths
	log  *zap.Logger
}

func newTokenAuth(token string, log *zap.Logger) *tokenAuth {
	return &tokenAuth{want: sha256.Sum256([]byte(token)), log: log}
}

// check returns nil or an UNAUTHENTICATED status; its message never holds
// what the client sent.
func (a *tokenAuth) check(ctx context.Context, method string) error {
	var got []string
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		got = md.Get("authorization")
	}
	why := ""
	switch {
	case len(got) == 0:
		why = "this server needs an `authorization: Bearer <token>` header (its --token-file); the call had none"
	case len(got) > 1:
		why = "more than one authorization header"
	default:
		scheme, token, _ := strings.Cut(got[0], " ")
		sum := sha256.Sum256([]byte(strings.TrimSpace(token)))
		if !strings.EqualFold(scheme, "Bearer") {
			why = "the authorization header is not a Bearer token"
		} else if subtle.ConstantTimeCompare(sum[:], a.want[:]) != 1 {
			why = "the bearer token does not match this server's --token-file"
		}
	}
	if why == "" {
		return nil
	}
	fields := []zap.Field{zap.String("method", clip.String(method)), zap.String("reason", why)} // a method the server lacks is the client's text
	if p, ok := peer.FromContext(ctx); ok {
		fields = append(fields, zap.String("peer", p.Addr.String()))
	}
	a.log.Warn("unauthenticated call refused", fields...)
	return status.Error(codes.Unauthenticated, why)
}

func (a *tokenAuth) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
	if err := a.check(ctx, info.FullMethod); err != nil {
		return nil, err
	}
	return next(ctx, req)
}

func (a *tokenAuth) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, next grpc.StreamHandler) error {
	if err := a.check(ss.Context(), info.FullMethod); err != nil {
		return err
	}
	return next(srv, ss)
}

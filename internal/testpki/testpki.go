// Package testpki writes a small, short-lived PKI for tests: a CA, a
// server certificate for localhost, 127.0.0.1 and ::1, a client
// certificate, and a second CA with a client certificate of its own (one
// the first CA never signed). Keys are ECDSA P-256, certificates valid for
// an hour. Nothing here is for production use.
package testpki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Files are the PEM files Write makes.
type Files struct {
	CA, ServerCert, ServerKey, ClientCert, ClientKey string
	// OtherCA signed OtherClientCert; CA did not.
	OtherCA, OtherClientCert, OtherClientKey string
}

type issuer struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// Write makes the PKI in dir (the files are mode 0600).
func Write(dir string) (Files, error) {
	p := func(name string) string { return filepath.Join(dir, name) }
	f := Files{
		CA: p("ca.pem"), ServerCert: p("server.pem"), ServerKey: p("server-key.pem"),
		ClientCert: p("client.pem"), ClientKey: p("client-key.pem"),
		OtherCA: p("other-ca.pem"), OtherClientCert: p("other-client.pem"), OtherClientKey: p("other-client-key.pem"),
	}
	ca, err := newCA("pixelflight test CA", f.CA)
	if err != nil {
		return f, err
	}
	other, err := newCA("another test CA", f.OtherCA)
	if err != nil {
		return f, err
	}
	server := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "localhost"},
		DNSNames:    []string{"localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if err := leaf(ca, server, f.ServerCert, f.ServerKey); err != nil {
		return f, err
	}
	client := func() *x509.Certificate {
		return &x509.Certificate{Subject: pkix.Name{CommonName: "pixelflight test client"},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	}
	if err := leaf(ca, client(), f.ClientCert, f.ClientKey); err != nil {
		return f, err
	}
	if err := leaf(other, client(), f.OtherClientCert, f.OtherClientKey); err != nil {
		return f, err
	}
	return f, nil
}

func newCA(name, certFile string) (*issuer, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("CA key: %w", err)
	}
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: name},
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	if err := stamp(tmpl); err != nil {
		return nil, err
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("CA certificate: %w", err)
	}
	if err := writePEM(certFile, "CERTIFICATE", der); err != nil {
		return nil, err
	}
	return &issuer{cert: cert, key: key}, nil
}

func leaf(ca *issuer, tmpl *x509.Certificate, certFile, keyFile string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("key: %w", err)
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	if err := stamp(tmpl); err != nil {
		return err
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return fmt.Errorf("certificate %s: %w", tmpl.Subject.CommonName, err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("key: %w", err)
	}
	if err := writePEM(certFile, "CERTIFICATE", der); err != nil {
		return err
	}
	return writePEM(keyFile, "PRIVATE KEY", pkcs8)
}

// stamp gives tmpl a random serial and an hour of validity (from a minute
// ago, for clock skew).
func stamp(tmpl *x509.Certificate) error {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return fmt.Errorf("serial: %w", err)
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore = time.Now().Add(-time.Minute)
	tmpl.NotAfter = time.Now().Add(time.Hour)
	return nil
}

func writePEM(path, typ string, der []byte) error {
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", typ, err)
	}
	return nil
}

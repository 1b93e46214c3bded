package e2e

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skidata/skidata/test/apitest"
)

// writeTestCA writes a CA of the test's own (ca.pem) and a server
// certificate it signed for 127.0.0.1 and localhost (server.pem,
// server.key) into dir: what a broker's TLS listener needs, and what a
// client must trust to reach it.
func writeTestCA(t *testing.T, dir string) {
	t.Helper()
	caKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "skidata test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	srvKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, ca, &srvKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	for name, block := range map[string]*pem.Block{
		"ca.pem":     {Type: "CERTIFICATE", Bytes: caDER},
		"server.pem": {Type: "CERTIFICATE", Bytes: srvDER},
		"server.key": {Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(srvKey)},
	} {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAMQPSWithTheBrokersCA: the service reaches a broker over amqps://
// and verifies its certificate, trusting a private CA given either as
// SSL_CERT_FILE (Go's system pool) or as the URL's cacertfile parameter;
// without the CA it refuses to start. The broker is a RabbitMQ node of the
// test's own with a TLS listener (scripts/rabbitmq-cluster.sh with
// RMQ_TLS_DIR); Amazon MQ's certificate comes from a public CA, which the
// instances' system pool already trusts.
func TestAMQPSWithTheBrokersCA(t *testing.T) {
	tlsDir := t.TempDir()
	writeTestCA(t, tlsDir)
	t.Setenv("RMQ_TLS_DIR", tlsDir)
	c := startClusterOf(t, 1)
	tlsURL := strings.Replace(strings.Replace(c.urls[0], "amqp://", "amqps://", 1), fmt.Sprintf(":%d/", c.ports[0]), fmt.Sprintf(":%d/", c.ports[0]+1), 1)
	bin := buildSkiapi(t)
	prefix := fmt.Sprintf("skitls.%d", time.Now().UnixNano())
	flags := []string{"--queue", "rabbitmq", "--store", "memory"}
	ca := filepath.Join(tlsDir, "ca.pem")

	t.Run("without the CA the start fails", func(t *testing.T) {
		t.Setenv("SSL_CERT_FILE", filepath.Join(t.TempDir(), "none.pem"))
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, bin, append([]string{"--listen", "127.0.0.1:0", "--amqp-url", tlsURL, "--amqp-prefix", prefix}, flags...)...).CombinedOutput()
		if err == nil || ctx.Err() != nil {
			t.Fatalf("skiapi with an untrusted broker certificate: %v; want a failed start\n%s", err, out)
		}
		t.Logf("skiapi refused to start:\n%s", out)
		if !strings.Contains(string(out), "certificate signed by unknown authority") {
			t.Errorf("the failed start does not say the certificate was refused:\n%s", out)
		}
	})

	for name, setup := range map[string]func(t *testing.T) string{
		"CA in SSL_CERT_FILE": func(t *testing.T) string {
			t.Setenv("SSL_CERT_FILE", ca)
			return tlsURL
		},
		"CA in the URL": func(t *testing.T) string {
			return tlsURL + "?cacertfile=" + ca
		},
	} {
		t.Run(name, func(t *testing.T) {
			url := setup(t)
			p := startSkiapi(t, "skiapi-amqps", bin, append([]string{"--amqp-url", url, "--amqp-prefix", prefix + "." + strings.ReplaceAll(name, " ", "")}, flags...)...)
			r := rolesRide{skier: 7400, time: int(time.Now().UnixNano() % 1440), lift: 3}
			if code, err := postRide(p.base, r); err != nil || code != http.StatusCreated {
				t.Fatalf("POST over amqps: %d, %v; want 201", code, err)
			}
			apitest.Eventually(t, "the ride stored through the TLS broker", func() string {
				got, err := storedRides(t, p.base, []int{7400})
				if err != nil {
					return err.Error()
				}
				for _, g := range got {
					if g == r {
						return ""
					}
				}
				return fmt.Sprintf("stored %v, not %+v", got, r)
			})
			out, err := c.run(t, time.Minute, "ctl", "1", "list_connections", "--quiet", "--no-table-headers", "ssl", "port")
			if err != nil {
				t.Fatalf("list connections: %v\n%s", err, out)
			}
			if !strings.Contains(out, fmt.Sprintf("true\t%d", c.ports[0]+1)) {
				t.Errorf("no TLS connection on port %d among the broker's connections:\n%s", c.ports[0]+1, out)
			}
			if strings.Contains(out, fmt.Sprintf("false\t%d", c.ports[0])) {
				t.Errorf("a plain AMQP connection on port %d:\n%s", c.ports[0], out)
			}
		})
	}
}

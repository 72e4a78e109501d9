#!/usr/bin/env bash
# Makes a throw-away private CA and a server certificate for 127.0.0.1 and
# localhost (P-256, valid 2 days) with the openssl CLI, for the TLS benchmark
# and the e2e client over TLS:
#   DIR/ca.pem             the CA to trust (NODE_EXTRA_CA_CERTS, loadgen --ca)
#   DIR/server.pem, .key   the server's certificate and key
# usage: scripts/make_test_certs.sh DIR
set -euo pipefail
dir=${1:?usage: make_test_certs.sh DIR}
mkdir -p "$dir"
cd "$dir"
ec=(-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes)
openssl req -x509 "${ec[@]}" -days 2 -subj "/CN=arbiter test CA" -keyout ca.key -out ca.pem \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
openssl req "${ec[@]}" -subj "/CN=localhost" -keyout server.key -out server.csr 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=critical,CA:FALSE\n' >server.ext
openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile server.ext \
  -out server.pem 2>/dev/null
rm -f server.csr server.ext ca.srl

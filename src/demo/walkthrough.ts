/** The text `npm start` prints: the demo credentials (once) and a curl walkthrough. */
export function printDemoWalkthrough(options: {
  publicUrl: string;
  adminUrl: string;
  clientId: string;
  secret: string | null;
}): void {
  const base = options.publicUrl.replace('0.0.0.0', '127.0.0.1');
  const secretLine =
    options.secret === null
      ? '  (the demo secret was printed on the first run; delete .portaria-demo/ to start over)'
      : `  clientSecret: ${options.secret}\n  (shown once: it is stored only as a hash)`;
  const secretValue = options.secret ?? '<the demo secret>';
  // With server.tls the commands need curl to trust the gateway's certificate.
  const tlsLine = base.startsWith('https:')
    ? '\n  (TLS: give curl the CA of the server certificate: --cacert <file>)'
    : '';
  process.stderr.write(`
Portaria demo is running.
  Gateway:  ${base}
  Admin:    ${options.adminUrl}  (/healthz, /readyz, /metrics)

Demo client:
  clientId: ${options.clientId}
${secretLine}

Try it:${tlsLine}
  # 1. Get an access token
  TOKEN=$(curl -s ${base}/v1/authentication/accesstoken \\
    -H 'Content-Type: application/json' \\
    -d '{"clientId":"${options.clientId}","clientSecret":"${secretValue}"}' \\
    | node -pe 'JSON.parse(require("fs").readFileSync(0)).token_de_acesso')

  # 2. Call the API through the gateway (the demo upstream echoes what it received)
  curl -s ${base}/v1/orders/42 -H "Authorization: Bearer $TOKEN"

  # 3. No token: refused with 401 problem details
  curl -si ${base}/v1/orders/42

  # 4. A route needing a scope the demo client lacks: 403
  curl -si ${base}/v1/reports -H "Authorization: Bearer $TOKEN"

Stop with Ctrl-C.
`);
}

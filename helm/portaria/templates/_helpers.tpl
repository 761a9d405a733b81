{{/*
Names. The full name is "<release>-portaria", or the release name alone when it already
contains the chart name; Kubernetes names are limited to 63 characters.
*/}}
{{- define "portaria.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "portaria.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "portaria.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Standard labels on every object. */}}
{{- define "portaria.labels" -}}
helm.sh/chart: {{ include "portaria.chart" . }}
{{ include "portaria.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: portaria
{{- end -}}

{{/* Labels that select the gateway pods (immutable in a Deployment's selector). */}}
{{- define "portaria.selectorLabels" -}}
app.kubernetes.io/name: {{ include "portaria.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/*
The admin listener's Service: "<full name>-admin", always ClusterIP. Its component label
sets it apart from the public Service (the ServiceMonitor selects it by that label).
*/}}
{{- define "portaria.adminServiceName" -}}
{{- printf "%s-admin" (include "portaria.fullname" . | trunc 57 | trimSuffix "-") -}}
{{- end -}}

{{/*
The decision listeners' Service (mode authorizer or both): "<full name>-authorizer", always
ClusterIP, label app.kubernetes.io/component: authorizer.
*/}}
{{- define "portaria.authorizerServiceName" -}}
{{- printf "%s-authorizer" (include "portaria.fullname" . | trunc 52 | trimSuffix "-") -}}
{{- end -}}

{{/* "true" when the gateway answers decisions (mode authorizer or both). */}}
{{- define "portaria.decides" -}}
{{- if ne (.Values.mode | default "proxy") "proxy" -}}true{{- end -}}
{{- end -}}

{{- define "portaria.adminServiceLabels" -}}
{{ include "portaria.selectorLabels" . }}
app.kubernetes.io/component: admin
{{- end -}}

{{/*
Labels of the `helm test` pod. Its name label is "<name>-test", so no selector of the gateway
pods (Deployment, Services, PodDisruptionBudget, NetworkPolicy) matches it. The name is cut
before "-test" is added, so the suffix always survives the 63-character limit.
*/}}
{{- define "portaria.testSelectorLabels" -}}
app.kubernetes.io/name: {{ printf "%s-test" (include "portaria.name" . | trunc 58 | trimSuffix "-") }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "portaria.testLabels" -}}
helm.sh/chart: {{ include "portaria.chart" . }}
{{ include "portaria.testSelectorLabels" . }}
app.kubernetes.io/component: test
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: portaria
{{- end -}}

{{- define "portaria.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "portaria.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "portaria.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{- define "portaria.secretName" -}}
{{- default (include "portaria.fullname" .) .Values.secrets.existingSecret -}}
{{- end -}}

{{/* Where the pod mounts things. */}}
{{- define "portaria.configDir" -}}/etc/portaria/config{{- end -}}
{{- define "portaria.secretDir" -}}/etc/portaria/secret{{- end -}}
{{- define "portaria.redisPasswordDir" -}}/etc/portaria/redis{{- end -}}
{{- define "portaria.redisTlsDir" -}}/etc/portaria/redis-tls{{- end -}}
{{- define "portaria.redisSentinelPasswordDir" -}}/etc/portaria/redis-sentinel{{- end -}}
{{- define "portaria.dataDir" -}}/data{{- end -}}
{{- define "portaria.tlsDir" -}}/etc/portaria/tls{{- end -}}
{{- define "portaria.clientCaDir" -}}/etc/portaria/client-ca{{- end -}}
{{- define "portaria.clientCrlDir" -}}/etc/portaria/client-crl{{- end -}}
{{- define "portaria.testTlsDir" -}}/etc/portaria-test/tls{{- end -}}
{{- define "portaria.testClientDir" -}}/etc/portaria-test/client{{- end -}}

{{/* config.server.tls.clientCertificates (gateway default off). */}}
{{- define "portaria.clientCertificates" -}}
{{- dig "server" "tls" "clientCertificates" "off" (.Values.config | default dict) -}}
{{- end -}}

{{/* The public listener's scheme. */}}
{{- define "portaria.publicScheme" -}}
{{- ternary "https" "http" .Values.tls.enabled -}}
{{- end -}}

{{/* A volume of one key of a Secret or a ConfigMap ({secretName, configMapName, key}), as path. */}}
{{- define "portaria.fileVolume" -}}
{{- $source := index . 0 -}}
{{- $path := index . 1 -}}
{{- if $source.secretName }}
secret:
  secretName: {{ $source.secretName }}
  defaultMode: 0440
  items:
    - key: {{ $source.key }}
      path: {{ $path }}
{{- else }}
configMap:
  name: {{ $source.configMapName }}
  defaultMode: 0440
  items:
    - key: {{ $source.key }}
      path: {{ $path }}
{{- end }}
{{- end -}}

{{/* The revocation and token-limit stores chosen in config. */}}
{{- define "portaria.revocationStore" -}}
{{- dig "revocation" "store" "local" (.Values.config | default dict) -}}
{{- end -}}
{{- define "portaria.tokenLimitsStore" -}}
{{- dig "tokenLimits" "store" "local" (.Values.config | default dict) -}}
{{- end -}}
{{- define "portaria.usesRedis" -}}
{{- if or (eq (include "portaria.revocationStore" .) "redis") (eq (include "portaria.tokenLimitsStore" .) "redis") (eq (include "portaria.replayStore" .) "redis") -}}true{{- end -}}
{{- end -}}

{{/* config.oauth.replayStore (gateway default: redis with the redis revocation store, else local). */}}
{{- define "portaria.replayStore" -}}
{{- dig "oauth" "replayStore" (include "portaria.revocationStore" . | eq "redis" | ternary "redis" "local") (.Values.config | default dict) -}}
{{- end -}}

{{/* config.server.shutdownGraceMs (gateway default 30000). */}}
{{- define "portaria.shutdownGraceMs" -}}
{{- dig "server" "shutdownGraceMs" 30000 (.Values.config | default dict) | int -}}
{{- end -}}

{{/* config.revocation.whileRedisDown (gateway default queue). */}}
{{- define "portaria.whileRedisDown" -}}
{{- dig "revocation" "whileRedisDown" "queue" (.Values.config | default dict) -}}
{{- end -}}

{{/* Seconds of cleanup after the drain: pools, Redis, the last access lines (≤ 1 s), the log flush. */}}
{{- define "portaria.shutdownCleanupSeconds" -}}5{{- end -}}

{{/*
The shutdown needs preStop + ceil(shutdownGraceMs / 1000) seconds for the drain, plus the
cleanup after it, before the kill: the least terminationGracePeriodSeconds, and its default.
*/}}
{{- define "portaria.minTerminationGracePeriodSeconds" -}}
{{- $graceSeconds := div (add (include "portaria.shutdownGraceMs" . | int) 999) 1000 -}}
{{- add (.Values.drain.preStopSleepSeconds | int) $graceSeconds (include "portaria.shutdownCleanupSeconds" . | int) -}}
{{- end -}}

{{- define "portaria.terminationGracePeriodSeconds" -}}
{{- if kindIs "invalid" .Values.terminationGracePeriodSeconds -}}
{{- include "portaria.minTerminationGracePeriodSeconds" . -}}
{{- else -}}
{{- .Values.terminationGracePeriodSeconds | int -}}
{{- end -}}
{{- end -}}

{{/*
The gateway configuration (portaria.yaml): config from the values, with the settings the
chart owns (listeners, file locations, Redis URL) set to what the pod provides.
*/}}
{{- define "portaria.gatewayConfig" -}}
{{- $cfg := deepCopy (.Values.config | default dict) -}}
{{- $server := deepCopy ($cfg.server | default dict) -}}
{{- $_ := set $server "host" "0.0.0.0" -}}
{{- $_ := set $server "port" (.Values.ports.http | int) -}}
{{- $_ := set $cfg "server" $server -}}
{{- $admin := dict "host" "0.0.0.0" "port" (.Values.ports.admin | int) "tokenFile" nil -}}
{{- if .Values.adminApi.enabled -}}
{{- $_ := set $admin "tokenFile" (printf "%s/admin-token" (include "portaria.secretDir" .)) -}}
{{- end -}}
{{- $_ := set $cfg "admin" $admin -}}
{{- $keys := deepCopy ($cfg.keys | default dict) -}}
{{- $_ := set $keys "dir" (include "portaria.secretDir" .) -}}
{{- $_ := set $cfg "keys" $keys -}}
{{- $_ := set $cfg "clients" (dict "file" (printf "%s/clients.json" (include "portaria.secretDir" .))) -}}
{{- $revocation := deepCopy ($cfg.revocation | default dict) -}}
{{- $_ := set $revocation "file" (printf "%s/revocations.log" (include "portaria.dataDir" .)) -}}
{{- $_ := set $revocation "queueFile" (printf "%s/revocations-pending.log" (include "portaria.dataDir" .)) -}}
{{- $_ := set $cfg "revocation" $revocation -}}
{{- $redis := deepCopy ($cfg.redis | default dict) -}}
{{- if .Values.redis.url -}}
{{- $_ := set $redis "url" .Values.redis.url -}}
{{- end -}}
{{- if .Values.redis.passwordSecret.name -}}
{{- $_ := set $redis "passwordFile" (printf "%s/password" (include "portaria.redisPasswordDir" .)) -}}
{{- end -}}
{{- with .Values.redis.username -}}
{{- $_ := set $redis "username" . -}}
{{- end -}}
{{- $tlsValues := .Values.redis.tls -}}
{{- if $tlsValues.enabled -}}
{{- $tls := dict "enabled" true -}}
{{- with $tlsValues.serverName -}}
{{- $_ := set $tls "serverName" . -}}
{{- end -}}
{{- if $tlsValues.secret.name -}}
{{- $dir := include "portaria.redisTlsDir" . -}}
{{- if $tlsValues.secret.caKey -}}
{{- $_ := set $tls "caFile" (printf "%s/ca.crt" $dir) -}}
{{- end -}}
{{- if $tlsValues.secret.certKey -}}
{{- $_ := set $tls "certFile" (printf "%s/tls.crt" $dir) -}}
{{- $_ := set $tls "keyFile" (printf "%s/tls.key" $dir) -}}
{{- end -}}
{{- end -}}
{{- $_ := set $redis "tls" $tls -}}
{{- end -}}
{{- $sentinelValues := .Values.redis.sentinel -}}
{{- if $sentinelValues.nodes -}}
{{- $sentinel := dict "masterName" $sentinelValues.masterName "nodes" $sentinelValues.nodes -}}
{{- with $sentinelValues.username -}}
{{- $_ := set $sentinel "username" . -}}
{{- end -}}
{{- if $sentinelValues.passwordSecret.name -}}
{{- $_ := set $sentinel "passwordFile" (printf "%s/password" (include "portaria.redisSentinelPasswordDir" .)) -}}
{{- end -}}
{{- $_ := set $redis "sentinel" $sentinel -}}
{{- end -}}
{{- with .Values.redis.cluster.nodes -}}
{{- $_ := set $redis "cluster" (dict "nodes" .) -}}
{{- end -}}
{{- if $redis -}}
{{- $_ := set $cfg "redis" $redis -}}
{{- end -}}
{{- /* TLS on the public listener and the client CAs and CRLs: files the pod mounts. */ -}}
{{- if .Values.tls.enabled -}}
{{- $serverTls := deepCopy ($server.tls | default dict) -}}
{{- $_ := set $serverTls "enabled" true -}}
{{- $_ := set $serverTls "certFile" (printf "%s/tls.crt" (include "portaria.tlsDir" .)) -}}
{{- $_ := set $serverTls "keyFile" (printf "%s/tls.key" (include "portaria.tlsDir" .)) -}}
{{- $_ := set $server "tls" $serverTls -}}
{{- end -}}
{{- $certificates := deepCopy ($cfg.clientCertificate | default dict) -}}
{{- $ca := .Values.clientCertificate.ca -}}
{{- if or $ca.secretName $ca.configMapName -}}
{{- $_ := set $certificates "caFiles" (list (printf "%s/ca.crt" (include "portaria.clientCaDir" .))) -}}
{{- end -}}
{{- $crl := .Values.clientCertificate.crl -}}
{{- if or $crl.secretName $crl.configMapName -}}
{{- $_ := set $certificates "crlFiles" (list (printf "%s/crl.pem" (include "portaria.clientCrlDir" .))) -}}
{{- end -}}
{{- if $certificates -}}
{{- $_ := set $cfg "clientCertificate" $certificates -}}
{{- end -}}
{{- /* The security profile (docs/fapi.md): a value of its own, the gateway checks the rest. */ -}}
{{- if ne (.Values.profile | default "none") "none" -}}
{{- $_ := set $cfg "profile" .Values.profile -}}
{{- end -}}
{{- /* Authorizer mode: values of their own, the decision ports are the pod's. */ -}}
{{- if include "portaria.decides" . -}}
{{- $_ := set $cfg "mode" .Values.mode -}}
{{- $a := .Values.authorizer -}}
{{- $authorizer := dict "host" "0.0.0.0" "port" ($a.port | int) -}}
{{- $_ := set $authorizer "grpc" (dict "enabled" $a.grpc.enabled "port" ($a.grpc.port | int)) -}}
{{- $_ := set $authorizer "originalMethodHeader" $a.originalMethodHeader -}}
{{- $_ := set $authorizer "originalUriHeader" $a.originalUriHeader -}}
{{- $_ := set $authorizer "cacheDecisions" (dict "enabled" $a.cacheDecisions.enabled "maxAgeSeconds" ($a.cacheDecisions.maxAgeSeconds | int)) -}}
{{- $_ := set $cfg "authorizer" $authorizer -}}
{{- end -}}
{{- toYaml $cfg -}}
{{- end -}}

{{/*
A Prometheus duration in milliseconds: numbers with the units y, w, d, h, m, s, ms, largest
first, each at most once ("1m30s", "500ms"), as values.schema.json admits them and
Prometheus parses them (a year is 365 days, a week 7).
*/}}
{{- define "portaria.durationMs" -}}
{{- $unitMs := dict "y" 31536000000 "w" 604800000 "d" 86400000 "h" 3600000 "m" 60000 "s" 1000 "ms" 1 -}}
{{- $total := 0 -}}
{{- range regexFindAll "[0-9]+(ms|s|m|h|d|w|y)" . -1 -}}
{{- $number := regexFind "^[0-9]+" . -}}
{{- $total = add $total (mul (atoi $number) (get $unitMs (trimPrefix $number .))) -}}
{{- end -}}
{{- $total -}}
{{- end -}}

{{/*
The range of the rate() and increase() windows in the PrometheusRule's expressions. Each
window needs two samples, so the ServiceMonitor's interval may be at most half of it. (The
alert descriptions say "5 minutes" in words.)
*/}}
{{- define "portaria.alertWindow" -}}5m{{- end -}}

{{/*
Impossible combinations stop the render with a message naming the values to change.
*/}}
{{- define "portaria.validate" -}}
{{- $store := include "portaria.revocationStore" . -}}
{{- if and (ne $store "redis") (or .Values.autoscaling.enabled (gt (.Values.replicaCount | int) 1)) -}}
{{- fail (printf "replicaCount > 1 or autoscaling.enabled needs config.revocation.store: redis (the %s revocation store is per pod, so a revocation would reach only one replica)" $store) -}}
{{- end -}}
{{- if and (ne (include "portaria.replayStore" .) "redis") (or .Values.autoscaling.enabled (gt (.Values.replicaCount | int) 1)) -}}
{{- fail "replicaCount > 1 or autoscaling.enabled needs config.oauth.replayStore: redis (a local replay store lets a client assertion be used once per replica)" -}}
{{- end -}}
{{- $quotas := .Values.config.quotas | default dict -}}
{{- if and $quotas.policies (ne ($quotas.store | default "local") "redis") (or .Values.autoscaling.enabled (gt (.Values.replicaCount | int) 1)) -}}
{{- fail "replicaCount > 1 or autoscaling.enabled with config.quotas.policies needs config.quotas.store: redis (local counters are per pod: each replica would let a partner's whole quota through)" -}}
{{- end -}}
{{- $dpop := .Values.config.dpop | default dict -}}
{{- $nonces := $dpop.nonces | default dict -}}
{{- if and $dpop.enabled $nonces.enabled (not $nonces.secretFile) (or .Values.autoscaling.enabled (gt (.Values.replicaCount | int) 1)) -}}
{{- fail "replicaCount > 1 or autoscaling.enabled with config.dpop.nonces.enabled needs config.dpop.nonces.secretFile (one secret every replica shares, from a Secret mounted with extraVolumes: else each pod refuses the others' nonces)" -}}
{{- end -}}
{{- $redisWays := list -}}
{{- if or .Values.redis.url .Values.redis.existingSecret -}}{{- $redisWays = append $redisWays "redis.url/existingSecret" -}}{{- end -}}
{{- if .Values.redis.sentinel.nodes -}}{{- $redisWays = append $redisWays "redis.sentinel.nodes" -}}{{- end -}}
{{- if .Values.redis.cluster.nodes -}}{{- $redisWays = append $redisWays "redis.cluster.nodes" -}}{{- end -}}
{{- if and (include "portaria.usesRedis" .) (not $redisWays) -}}
{{- fail "config.revocation.store, config.tokenLimits.store or config.oauth.replayStore is redis: set redis.url, redis.existingSecret, redis.sentinel.nodes or redis.cluster.nodes" -}}
{{- end -}}
{{- if gt (len $redisWays) 1 -}}
{{- fail (printf "%s are all set: Redis is reached one way (one server, Sentinel or Cluster)" (join " and " $redisWays)) -}}
{{- end -}}
{{- if and .Values.redis.sentinel.nodes (not .Values.redis.sentinel.masterName) -}}
{{- fail "redis.sentinel.nodes needs redis.sentinel.masterName (the name the sentinels monitor the primary under)" -}}
{{- end -}}
{{- if and (not .Values.redis.tls.enabled) .Values.redis.tls.secret.name -}}
{{- fail "redis.tls.secret is set but redis.tls.enabled is false" -}}
{{- end -}}
{{- if and .Values.redis.tls.secret.name (not (or .Values.redis.tls.secret.caKey .Values.redis.tls.secret.certKey)) -}}
{{- fail "redis.tls.secret.name needs redis.tls.secret.caKey or redis.tls.secret.certKey (what to mount from it)" -}}
{{- end -}}
{{- if and .Values.redis.tls.enabled (hasPrefix "redis://" .Values.redis.url) -}}
{{- fail "redis.tls.enabled with a redis:// url: use rediss:// for TLS" -}}
{{- end -}}
{{- if and .Values.redis.tls.secret.certKey (not .Values.redis.tls.secret.keyKey) -}}
{{- fail "redis.tls.secret.certKey needs redis.tls.secret.keyKey (the client certificate's key)" -}}
{{- end -}}
{{- if and .Values.tls.enabled (not .Values.tls.secret.name) -}}
{{- fail "tls.enabled needs tls.secret.name (the Secret with the server certificate and its key)" -}}
{{- end -}}
{{- if and .Values.tls.secret.name (not .Values.tls.enabled) -}}
{{- fail "tls.secret.name is set but tls.enabled is false" -}}
{{- end -}}
{{- if and (not .Values.tls.enabled) (dig "server" "tls" nil (.Values.config | default dict)) -}}
{{- fail "config.server.tls needs tls.enabled (and tls.secret.name): without it the public listener is plain HTTP" -}}
{{- end -}}
{{- range $name := list "ca" "crl" -}}
{{- $source := index $.Values.clientCertificate $name -}}
{{- if and $source.secretName $source.configMapName -}}
{{- fail (printf "clientCertificate.%s: secretName and configMapName are both set; give one" $name) -}}
{{- end -}}
{{- end -}}
{{- $hasCa := or .Values.clientCertificate.ca.secretName .Values.clientCertificate.ca.configMapName -}}
{{- if and (or .Values.clientCertificate.crl.secretName .Values.clientCertificate.crl.configMapName) (not $hasCa) -}}
{{- fail "clientCertificate.crl needs clientCertificate.ca (the CAs whose revocations the CRLs list)" -}}
{{- end -}}
{{- if and (ne (include "portaria.clientCertificates" .) "off") (not $hasCa) -}}
{{- fail (printf "config.server.tls.clientCertificates: %s needs clientCertificate.ca (the CAs partners' certificates chain to)" (include "portaria.clientCertificates" .)) -}}
{{- end -}}
{{- if and (eq (include "portaria.clientCertificates" .) "require") .Values.tests.enabled (or .Values.tests.clientId .Values.tests.existingSecret) (not .Values.tests.tls.clientSecret) -}}
{{- fail "config.server.tls.clientCertificates: require refuses the test's token request without a client certificate: set tests.tls.clientSecret (a kubernetes.io/tls Secret of a certificate the client CAs issued)" -}}
{{- end -}}
{{- if and .Values.redis.url .Values.redis.existingSecret -}}
{{- fail "redis.url and redis.existingSecret are both set: choose one source for the Redis URL" -}}
{{- end -}}
{{- if and .Values.secrets.existingSecret (or .Values.secrets.signingKeys .Values.secrets.clientsJson .Values.secrets.adminToken) -}}
{{- fail "secrets.existingSecret is set together with inline secrets (secrets.signingKeys, secrets.clientsJson, secrets.adminToken): use one or the other" -}}
{{- end -}}
{{- if and .Values.adminApi.enabled (not .Values.secrets.existingSecret) (not .Values.secrets.adminToken) -}}
{{- fail "adminApi.enabled needs secrets.adminToken (or an admin-token key in secrets.existingSecret)" -}}
{{- end -}}
{{- if and .Values.tests.existingSecret (or .Values.tests.clientId .Values.tests.clientSecret) -}}
{{- fail "tests.existingSecret is set together with tests.clientId/tests.clientSecret: use one or the other" -}}
{{- end -}}
{{- if ne (empty .Values.tests.clientId) (empty .Values.tests.clientSecret) -}}
{{- fail "tests.clientId and tests.clientSecret go together" -}}
{{- end -}}
{{- if eq (.Values.ports.http | int) (.Values.ports.admin | int) -}}
{{- fail "ports.http and ports.admin must differ (the admin listener is never public)" -}}
{{- end -}}
{{- if and .Values.autoscaling.enabled (gt (.Values.autoscaling.minReplicas | int) (.Values.autoscaling.maxReplicas | int)) -}}
{{- fail "autoscaling.minReplicas is above autoscaling.maxReplicas" -}}
{{- end -}}
{{- if and .Values.podDisruptionBudget.enabled (not (kindIs "invalid" .Values.podDisruptionBudget.minAvailable)) (not (kindIs "invalid" .Values.podDisruptionBudget.maxUnavailable)) -}}
{{- fail "podDisruptionBudget: set minAvailable or maxUnavailable, not both" -}}
{{- end -}}
{{- if and .Values.persistence.existingClaim (or .Values.autoscaling.enabled (gt (.Values.replicaCount | int) 1)) -}}
{{- fail "persistence.existingClaim is mounted by every pod: use it with one replica only (several replicas keep their data in Redis and an emptyDir)" -}}
{{- end -}}
{{- if hasKey ((.Values.config | default dict).server | default dict) "trustForwardedHeaders" -}}
{{- fail "config.server.trustForwardedHeaders: replaced by config.server.trustedProxies, the addresses or CIDRs of the proxies in front of the gateway (e.g. [10.0.0.0/8]); remove trustForwardedHeaders (false is trustedProxies: [])" -}}
{{- end -}}
{{- if dig "log" "pretty" false (.Values.config | default dict) -}}
{{- fail "config.log.pretty needs pino-pretty, a development dependency the image does not install: keep JSON logs in the cluster" -}}
{{- end -}}
{{- if and (not .Values.persistence.existingClaim) (regexMatch "^0+%?$" (toString .Values.updateStrategy.maxSurge)) (regexMatch "^0+%?$" (toString .Values.updateStrategy.maxUnavailable)) -}}
{{- fail (printf "updateStrategy.maxSurge (%v) and updateStrategy.maxUnavailable (%v) are both 0: Kubernetes refuses a rolling update that may neither add nor take down a pod; set one of them above 0 (maxSurge: 1 keeps full capacity)" .Values.updateStrategy.maxSurge .Values.updateStrategy.maxUnavailable) -}}
{{- end -}}
{{- with .Values.serviceMonitor -}}
{{- if .enabled -}}
{{- $intervalMs := include "portaria.durationMs" .interval | int64 -}}
{{- if gt (include "portaria.durationMs" .scrapeTimeout | int64) $intervalMs -}}
{{- fail (printf "serviceMonitor.scrapeTimeout (%s) is longer than serviceMonitor.interval (%s): the Prometheus Operator refuses such a ServiceMonitor (no metrics, no alerts); set scrapeTimeout to at most the interval" .scrapeTimeout .interval) -}}
{{- end -}}
{{- $window := include "portaria.alertWindow" $ -}}
{{- $maxIntervalMs := div (include "portaria.durationMs" $window | int64) 2 -}}
{{- if and $.Values.prometheusRule.enabled (gt $intervalMs $maxIntervalMs) -}}
{{- fail (printf "serviceMonitor.interval (%s) is above %ds: the alerts of prometheusRule.enabled compute rate() over [%s] windows, which need at least two samples each, so they could never fire; scrape at least every %ds" .interval (div $maxIntervalMs 1000) $window (div $maxIntervalMs 1000)) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $minGrace := include "portaria.minTerminationGracePeriodSeconds" . | int -}}
{{- if lt (include "portaria.terminationGracePeriodSeconds" . | int) $minGrace -}}
{{- $graceSeconds := div (add (include "portaria.shutdownGraceMs" . | int) 999) 1000 -}}
{{- fail (printf "terminationGracePeriodSeconds (%d) is too short: drain.preStopSleepSeconds (%d) + ceil(config.server.shutdownGraceMs / 1000) (%d) + %s s of cleanup after the drain = %d; set it to at least %d or leave it null to derive it (the pod would be killed mid-shutdown)" (.Values.terminationGracePeriodSeconds | int) (.Values.drain.preStopSleepSeconds | int) $graceSeconds (include "portaria.shutdownCleanupSeconds" .) $minGrace $minGrace) -}}
{{- end -}}
{{- if include "portaria.decides" . -}}
{{- $trusted := dig "server" "trustedProxies" (list) (.Values.config | default dict) -}}
{{- $fromEnv := false -}}
{{- range .Values.extraEnv -}}
{{- if eq (.name | default "") "PORTARIA_SERVER__TRUSTED_PROXIES" -}}{{- $fromEnv = true -}}{{- end -}}
{{- end -}}
{{- if and (empty $trusted) (not $fromEnv) -}}
{{- fail (printf "mode: %s needs config.server.trustedProxies: the addresses or CIDRs of the proxies that ask for decisions (your ingress controller's or mesh's pod CIDR, e.g. [10.0.0.0/8]); only they may say what the original request was, and the gateway refuses to start without them" .Values.mode) -}}
{{- end -}}
{{- $ports := dict -}}
{{- $_ := set $ports "ports.http" (.Values.ports.http | int) -}}
{{- $_ := set $ports "ports.admin" (.Values.ports.admin | int) -}}
{{- $_ := set $ports "authorizer.port" (.Values.authorizer.port | int) -}}
{{- if .Values.authorizer.grpc.enabled -}}
{{- $_ := set $ports "authorizer.grpc.port" (.Values.authorizer.grpc.port | int) -}}
{{- end -}}
{{- range $name, $port := $ports -}}
{{- range $other, $otherPort := $ports -}}
{{- if and (lt $name $other) (eq $port $otherPort) -}}
{{- fail (printf "%s and %s are both %d: every listener of the gateway needs a port of its own" $name $other $port) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if eq (lower .Values.authorizer.originalMethodHeader) (lower .Values.authorizer.originalUriHeader) -}}
{{- fail "authorizer.originalMethodHeader and authorizer.originalUriHeader name the same header" -}}
{{- end -}}
{{- end -}}
{{- /* profile: fapi-br (docs/fapi.md): what the chart can see; the gateway checks the rest. */ -}}
{{- if eq (.Values.profile | default "none") "fapi-br" -}}
{{- $config := .Values.config | default dict -}}
{{- if eq (dig "clientCertificate" "source" "none" $config) "none" -}}
{{- fail "profile: fapi-br binds every token to a client certificate: set config.clientCertificate.source (tls, with tls.enabled and clientCertificate.ca; or header, behind a TLS-terminating proxy)" -}}
{{- end -}}
{{- if and .Values.tls.enabled (ne (dig "server" "tls" "policy" "default" $config) "fapi") -}}
{{- fail "profile: fapi-br with tls.enabled needs config.server.tls.policy: fapi (the TLS 1.2 suites of FAPI 1.0 Part 2 §8.5)" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* PromQL label matchers selecting this release's series. */}}
{{- define "portaria.seriesSelector" -}}
{{- default (printf "job=%q,namespace=%q" (include "portaria.fullname" .) .Release.Namespace) .Values.prometheusRule.seriesSelector -}}
{{- end -}}

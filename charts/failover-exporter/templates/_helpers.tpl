{{- define "failover-exporter.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "failover-exporter.fullname" -}}
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

{{- define "failover-exporter.selectorLabels" -}}
app.kubernetes.io/name: {{ include "failover-exporter.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "failover-exporter.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "failover-exporter.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "failover-exporter.image" -}}
{{- $tag := .Values.image.tag | default (printf "v%s" .Chart.AppVersion) -}}
{{- if .Values.image.digest -}}
{{- printf "%s:%s@%s" .Values.image.repository $tag .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository $tag -}}
{{- end -}}
{{- end -}}

{{- define "failover-exporter.sidecar" -}}
{{- if not (has .Values.mode (list "deployment" "sidecar")) -}}
{{- fail (printf "mode %q: want deployment or sidecar" .Values.mode) -}}
{{- end -}}
{{- if eq .Values.mode "sidecar" }}true{{ end -}}
{{- end -}}

{{- /*
The config file's sections, and in each the places that take a secret
({file: PATH}) or a file (PATH): [key path..., "secret" or "file"]. Every
section the exporter's config file knows is here (internal/chart's tests
check this list against the config package's types).
*/ -}}
{{- define "failover-exporter.refPlaces" -}}
kafka:
  - [sasl, password, secret]
  - [tls, ca_file, file]
  - [tls, cert_file, file]
  - [tls, key_file, file]
redis:
  - [password, secret]
  - [tls, ca_file, file]
  - [tls, cert_file, file]
  - [tls, key_file, file]
kafka_modules:
  - [sasl, password, secret]
  - [tls, ca_file, file]
  - [tls, cert_file, file]
  - [tls, key_file, file]
redis_modules:
  - [password, secret]
  - [tls, ca_file, file]
  - [tls, cert_file, file]
  - [tls, key_file, file]
sentinel:
  - [sentinel_connection, password, secret]
  - [sentinel_connection, tls, ca_file, file]
  - [sentinel_connection, tls, cert_file, file]
  - [sentinel_connection, tls, key_file, file]
  - [node_connection, password, secret]
  - [node_connection, tls, ca_file, file]
  - [node_connection, tls, cert_file, file]
  - [node_connection, tls, key_file, file]
sentinel_modules:
  - [sentinel_connection, password, secret]
  - [sentinel_connection, tls, ca_file, file]
  - [sentinel_connection, tls, cert_file, file]
  - [sentinel_connection, tls, key_file, file]
  - [node_connection, password, secret]
  - [node_connection, tls, ca_file, file]
  - [node_connection, tls, cert_file, file]
  - [node_connection, tls, key_file, file]
mirrors:
  - [connect, password, secret]
  - [connect, tls, ca_file, file]
  - [connect, tls, cert_file, file]
  - [connect, tls, key_file, file]
{{- end -}}

{{- /* failover-exporter.kindName: what a value is, in words, for messages. */ -}}
{{- define "failover-exporter.kindName" -}}
{{- if kindIs "map" . -}}a map
{{- else if kindIs "slice" . -}}a list
{{- else if kindIs "string" . -}}a string
{{- else if kindIs "bool" . -}}true or false
{{- else if kindIs "invalid" . -}}empty
{{- else -}}a number
{{- end -}}
{{- end -}}

{{- /*
failover-exporter.resolved returns values.config as YAML, each
{secretKeyRef: {name, key}} replaced by the path of the mounted key, and a
list "mounts" of the Secrets and keys to mount: {config: ..., mounts: {NAME: [KEY...]}}.
Every section and key is passed through as it is; only the places of
refPlaces are rewritten, and a secret written there in clear fails the
render, since the config file is a ConfigMap.
*/ -}}
{{- define "failover-exporter.resolved" -}}
{{- $dir := .Values.secretsMountPath | trimSuffix "/" -}}
{{- $places := include "failover-exporter.refPlaces" . | fromYaml -}}
{{- $sections := keys $places | sortAlpha -}}
{{- $values := .Values.config | default dict -}}
{{- if not (kindIs "map" $values) -}}
{{- fail (printf "config must be a map of the exporter's config file sections (%s), not %s" (join ", " $sections) (include "failover-exporter.kindName" $values)) -}}
{{- end -}}
{{- range $section := keys $values | sortAlpha -}}
{{- if not (has $section $sections) -}}
{{- fail (printf "config.%s: the exporter's config file has no section %q; its sections are %s" $section $section (join ", " $sections)) -}}
{{- end -}}
{{- end -}}
{{- $config := dict -}}
{{- $mounts := dict -}}
{{- range $section := $sections -}}
{{- $items := index $values $section -}}
{{- if not (or (kindIs "invalid" $items) (kindIs "slice" $items)) -}}
{{- fail (printf "config.%s must be a list (one entry per %s, each a map of its settings), not %s" $section (ternary "flow" (ternary "module" "cluster" (hasSuffix "_modules" $section)) (eq $section "mirrors")) (include "failover-exporter.kindName" $items)) -}}
{{- end -}}
{{- $resolvedItems := list -}}
{{- range $i, $item := $items | default list -}}
{{- if not (kindIs "map" $item) -}}
{{- fail (printf "config.%s[%d] must be a map of settings, not %s" $section $i (include "failover-exporter.kindName" $item)) -}}
{{- end -}}
{{- $c := deepCopy $item -}}
{{- range $place := index $places $section -}}
{{- $path := initial $place -}}
{{- $parent := $c -}}
{{- range $k := initial $path -}}
{{- if kindIs "map" $parent -}}{{- $parent = index $parent $k -}}{{- end -}}
{{- end -}}
{{- $leaf := last $path -}}
{{- $where := printf "config.%s[%d].%s" $section $i (join "." $path) -}}
{{- $secret := eq (last $place) "secret" -}}
{{- $want := ternary "{secretKeyRef: {name: SECRET, key: KEY}} (or {file: PATH} for a file you mount yourself)" "{secretKeyRef: {name: SECRET, key: KEY}} (or the path of a file you mount yourself)" $secret -}}
{{- if and (kindIs "map" $parent) (hasKey $parent $leaf) -}}
{{- $v := index $parent $leaf -}}
{{- if kindIs "map" $v -}}
{{- if hasKey $v "env" -}}
{{- fail (printf "%s: {env: ...} is refused by this chart; use a Secret: %s" $where $want) -}}
{{- else if hasKey $v "secretKeyRef" -}}
{{- $ref := $v.secretKeyRef -}}
{{- if or (ne (len $v) 1) (not (kindIs "map" $ref)) (ne (len $ref) 2) (not (kindIs "string" $ref.name)) (not (kindIs "string" $ref.key)) -}}
{{- fail (printf "%s: want {secretKeyRef: {name: SECRET, key: KEY}} and nothing beside it" $where) -}}
{{- end -}}
{{- if not (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$" $ref.name) -}}
{{- fail (printf "%s: secretKeyRef name %q is not the name of a Secret (lower-case letters, digits, '-' and '.')" $where $ref.name) -}}
{{- end -}}
{{- if or (not (regexMatch "^[-._a-zA-Z0-9]+$" $ref.key)) (has $ref.key (list "." "..")) -}}
{{- fail (printf "%s: secretKeyRef key %q is not the key of a Secret (letters, digits, '-', '_' and '.')" $where $ref.key) -}}
{{- end -}}
{{- $file := printf "%s/%s/%s" $dir $ref.name $ref.key -}}
{{- if $secret -}}
{{- $_ := set $parent $leaf (dict "file" $file) -}}
{{- else -}}
{{- $_ := set $parent $leaf $file -}}
{{- end -}}
{{- $keys := get $mounts $ref.name | default list -}}
{{- $_ := set $mounts $ref.name (append $keys $ref.key | uniq | sortAlpha) -}}
{{- else if not (and $secret (eq (len $v) 1) (hasKey $v "file") (kindIs "string" $v.file)) -}}
{{- fail (printf "%s: want %s" $where $want) -}}
{{- end -}}
{{- else if $secret -}}
{{- if not (kindIs "invalid" $v) -}}
{{- fail (printf "%s is written inline, and the chart would store it in clear in a ConfigMap: use a Secret, %s: {secretKeyRef: {name: SECRET, key: KEY}}" $where $leaf) -}}
{{- end -}}
{{- else if not (kindIs "string" $v) -}}
{{- fail (printf "%s must be a path or %s, not %s" $where $want (include "failover-exporter.kindName" $v)) -}}
{{- else if or (contains "\n" $v) (contains "-----BEGIN" $v) -}}
{{- fail (printf "%s holds the contents of a file, not its path, and the chart would store it in clear in a ConfigMap: use a Secret, %s: {secretKeyRef: {name: SECRET, key: KEY}}" $where $leaf) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $resolvedItems = append $resolvedItems $c -}}
{{- end -}}
{{- if $resolvedItems -}}
{{- $_ := set $config $section $resolvedItems -}}
{{- end -}}
{{- end -}}
{{- if not (or $config.kafka $config.redis $config.sentinel $config.kafka_modules $config.redis_modules $config.sentinel_modules) -}}
{{- fail "config lists no cluster: set config.kafka, config.redis or config.sentinel, or modules for /probe (config.kafka_modules, config.redis_modules, config.sentinel_modules; see values.yaml)" -}}
{{- end -}}
{{- /* A flow names two clusters of the kafka list: say so here rather than in the pod's log. */ -}}
{{- $kafkaNames := list -}}
{{- range $config.kafka | default list -}}
{{- $kafkaNames = append $kafkaNames (.name | default "kafka") -}}
{{- end -}}
{{- range $i, $flow := $config.mirrors | default list -}}
{{- range $side := list "source" "target" -}}
{{- $name := index $flow $side -}}
{{- if not $name -}}
{{- fail (printf "config.mirrors[%d].%s is required: the name of a cluster of config.kafka" $i $side) -}}
{{- else if not (has $name $kafkaNames) -}}
{{- fail (printf "config.mirrors[%d].%s %q is not the name of a cluster of config.kafka (%s)" $i $side (toString $name) (ternary "config.kafka is empty" (printf "its clusters are %s" (join ", " $kafkaNames)) (empty $kafkaNames))) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- toYaml (dict "config" $config "mounts" $mounts) -}}
{{- end -}}

{{- define "failover-exporter.configFile" -}}
{{- (include "failover-exporter.resolved" . | fromYaml).config | toYaml -}}
{{- end -}}

{{- define "failover-exporter.configDir" -}}/etc/failover_exporter/config{{- end -}}

{{- /*
The volume of a Secret: failover-exporter-secret-NAME, a DNS label of at most
63 characters. A name with a dot, or too long to fit, is cut and given the
start of its SHA-256, so that two Secrets never share a volume however alike
their names.
*/ -}}
{{- define "failover-exporter.secretVolumeName" -}}
{{- $name := printf "failover-exporter-secret-%s" . -}}
{{- if or (contains "." .) (gt (len $name) 63) -}}
{{- $name = printf "failover-exporter-secret-%s-%s" (. | replace "." "-" | trunc 27 | trimSuffix "-") (sha256sum . | trunc 10) -}}
{{- end -}}
{{- $name -}}
{{- end -}}

{{- /* The exporter's container: rendered into the Deployment, or into the sidecar PodTemplate. */ -}}
{{- define "failover-exporter.container" -}}
{{- $mounts := (include "failover-exporter.resolved" . | fromYaml).mounts -}}
name: failover-exporter
image: {{ include "failover-exporter.image" . }}
imagePullPolicy: {{ .Values.image.pullPolicy }}
args:
  - --config.file={{ include "failover-exporter.configDir" . }}/config.yml
  - --web.listen-address=:{{ .Values.port }}
  {{- range .Values.extraArgs }}
  - {{ . | quote }}
  {{- end }}
ports:
  - name: metrics
    containerPort: {{ .Values.port }}
    protocol: TCP
{{- with .Values.livenessProbe }}
livenessProbe:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.readinessProbe }}
readinessProbe:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.resources }}
resources:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.securityContext }}
securityContext:
  {{- toYaml . | nindent 2 }}
{{- end }}
volumeMounts:
  - name: failover-exporter-config
    mountPath: {{ include "failover-exporter.configDir" . }}
    readOnly: true
  {{- range $name, $keys := $mounts }}
  - name: {{ include "failover-exporter.secretVolumeName" $name }}
    mountPath: {{ printf "%s/%s" ($.Values.secretsMountPath | trimSuffix "/") $name }}
    readOnly: true
  {{- end }}
  {{- with .Values.extraVolumeMounts }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end -}}

{{- /* The volumes the container mounts: its config and every referenced Secret (only the keys referenced). */ -}}
{{- define "failover-exporter.volumes" -}}
{{- $mounts := (include "failover-exporter.resolved" . | fromYaml).mounts -}}
{{- $mode := .Values.secretsDefaultMode -}}
{{- if kindIs "invalid" $mode -}}
{{- $mode = ternary 292 288 (eq (include "failover-exporter.sidecar" .) "true") -}}
{{- end -}}
{{- $taken := list "failover-exporter-config" -}}
{{- range $name, $keys := $mounts -}}
{{- $taken = append $taken (include "failover-exporter.secretVolumeName" $name) -}}
{{- end -}}
{{- $extra := list -}}
{{- range $i, $v := .Values.extraVolumes -}}
{{- if has $v.name $taken -}}
{{- fail (printf "extraVolumes[%d]: the volume name %q is taken by a volume of the chart; choose another name" $i $v.name) -}}
{{- else if has $v.name $extra -}}
{{- fail (printf "extraVolumes[%d]: the volume name %q is used twice" $i $v.name) -}}
{{- end -}}
{{- $extra = append $extra $v.name -}}
{{- end -}}
- name: failover-exporter-config
  configMap:
    name: {{ include "failover-exporter.fullname" . }}
{{- range $name, $keys := $mounts }}
- name: {{ include "failover-exporter.secretVolumeName" $name }}
  secret:
    secretName: {{ $name }}
    defaultMode: {{ $mode }}
    items:
      {{- range $keys }}
      - key: {{ . }}
        path: {{ . }}
      {{- end }}
{{- end }}
{{- with .Values.extraVolumes }}
{{ toYaml . }}
{{- end }}
{{- end -}}

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
The places of the config file that take a secret ({file: PATH}) or a file
(PATH): [cluster key path..., "secret" or "file"].
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
{{- end -}}

{{- /*
failover-exporter.resolved returns values.config as YAML, each
{secretKeyRef: {name, key}} replaced by the path of the mounted key, and a
list "mounts" of the Secrets and keys to mount: {config: ..., mounts: {NAME: [KEY...]}}.
*/ -}}
{{- define "failover-exporter.resolved" -}}
{{- $dir := .Values.secretsMountPath | trimSuffix "/" -}}
{{- $places := include "failover-exporter.refPlaces" . | fromYaml -}}
{{- $config := dict -}}
{{- $mounts := dict -}}
{{- range $system := list "kafka" "redis" -}}
{{- $clusters := list -}}
{{- range $i, $cluster := (index $.Values.config $system | default list) -}}
{{- if not (kindIs "map" $cluster) -}}
{{- fail (printf "config.%s[%d] is not a map" $system $i) -}}
{{- end -}}
{{- $c := deepCopy $cluster -}}
{{- range $place := index $places $system -}}
{{- $parent := $c -}}
{{- $keys := initial (initial $place) -}}
{{- range $k := $keys -}}
{{- if kindIs "map" $parent -}}{{- $parent = index $parent $k -}}{{- end -}}
{{- end -}}
{{- $leaf := index (initial $place) (sub (len $place) 2) -}}
{{- $where := printf "config.%s[%d].%s" $system $i (join "." (initial $place)) -}}
{{- if and (kindIs "map" $parent) (hasKey $parent $leaf) -}}
{{- $v := index $parent $leaf -}}
{{- if and (kindIs "map" $v) (hasKey $v "env") -}}
{{- fail (printf "%s: {env: ...} is refused by this chart; use {secretKeyRef: {name: SECRET, key: KEY}}" $where) -}}
{{- end -}}
{{- if and (kindIs "map" $v) (hasKey $v "secretKeyRef") -}}
{{- $ref := $v.secretKeyRef -}}
{{- if or (ne (len $v) 1) (not (kindIs "map" $ref)) (not $ref.name) (not $ref.key) -}}
{{- fail (printf "%s: want {secretKeyRef: {name: SECRET, key: KEY}} and nothing beside it" $where) -}}
{{- end -}}
{{- $path := printf "%s/%s/%s" $dir $ref.name $ref.key -}}
{{- if eq (last $place) "secret" -}}
{{- $_ := set $parent $leaf (dict "file" $path) -}}
{{- else -}}
{{- $_ := set $parent $leaf $path -}}
{{- end -}}
{{- $keys := get $mounts $ref.name | default list -}}
{{- $_ := set $mounts $ref.name (append $keys $ref.key | uniq | sortAlpha) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $clusters = append $clusters $c -}}
{{- end -}}
{{- if $clusters -}}
{{- $_ := set $config $system $clusters -}}
{{- end -}}
{{- end -}}
{{- if not $config -}}
{{- fail "config lists no cluster: set config.kafka or config.redis (see values.yaml)" -}}
{{- end -}}
{{- toYaml (dict "config" $config "mounts" $mounts) -}}
{{- end -}}

{{- define "failover-exporter.configFile" -}}
{{- (include "failover-exporter.resolved" . | fromYaml).config | toYaml -}}
{{- end -}}

{{- define "failover-exporter.configDir" -}}/etc/failover_exporter/config{{- end -}}

{{- define "failover-exporter.secretVolumeName" -}}
{{- printf "failover-exporter-secret-%s" (. | replace "." "-") | trunc 63 | trimSuffix "-" -}}
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

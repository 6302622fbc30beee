#!/usr/bin/env bash
# Runs every fuzz target for a while (default 60 s each) with seed corpora made from the
# repository's fixtures. Needs cargo-fuzz (`cargo install cargo-fuzz`); works on a stable
# toolchain through RUSTC_BOOTSTRAP=1 with the sanitizer off.
#
#   fuzz/run.sh            # 60 s per target
#   fuzz/run.sh 10 uri     # 10 s, one target
#
# A crash leaves its input in fuzz/artifacts/<target>/; copy it to fuzz/regressions/<target>/
# so `cargo test --test it fuzz_regressions::` replays it on every CI run.
set -euo pipefail
cd "$(dirname "$0")"
seconds="${1:-60}"
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(batch_decode entity_json uri service_properties_xml acl_xml authentication filter)
fi
seed() {
  local target="$1"
  mkdir -p "corpus/$target"
  case "$target" in
    batch_decode)
      for f in ../tests/golden/batch/*.http; do
        ct="${f%.http}.content-type"
        { [ -f "$ct" ] && head -n1 "$ct" || echo "multipart/mixed; boundary=batch_b"; cat "$f"; } \
          > "corpus/$target/$(basename "$f")"
      done ;;
    entity_json)
      printf '%s' '{"PartitionKey":"p","RowKey":"r","a@odata.type":"Edm.Int64","a":"5","d@odata.type":"Edm.DateTime","d":"2020-01-01T00:00:00Z","g@odata.type":"Edm.Guid","g":"00000000-0000-0000-0000-000000000000","b@odata.type":"Edm.Binary","b":"AAEC","x":1.5,"t":true}' > "corpus/$target/entity" ;;
    uri)
      printf '%s' "G/t(PartitionKey='a%27b',RowKey='c')?\$select=a,b&\$top=5&NextPartitionKey=1!4!YQ--" > "corpus/$target/entity"
      printf '%s' "G/Tables('t')?comp=acl" > "corpus/$target/table" ;;
    service_properties_xml)
      printf '%s' '<?xml version="1.0" encoding="utf-8"?><StorageServiceProperties><Logging><Version>1.0</Version><Delete>true</Delete><Read>false</Read><Write>true</Write><RetentionPolicy><Enabled>true</Enabled><Days>7</Days></RetentionPolicy></Logging><Cors><CorsRule><AllowedOrigins>*</AllowedOrigins><AllowedMethods>GET</AllowedMethods><MaxAgeInSeconds>5</MaxAgeInSeconds><ExposedHeaders>*</ExposedHeaders><AllowedHeaders>*</AllowedHeaders></CorsRule></Cors></StorageServiceProperties>' > "corpus/$target/props" ;;
    acl_xml)
      printf '%s' '<?xml version="1.0" encoding="utf-8"?><SignedIdentifiers><SignedIdentifier><Id>p1</Id><AccessPolicy><Start>2020-01-01T00:00:00Z</Start><Expiry>2099-01-01T00:00:00.0000000Z</Expiry><Permission>raud</Permission></AccessPolicy></SignedIdentifier></SignedIdentifiers>' > "corpus/$target/acl" ;;
    authentication)
      printf '%s\n%s\n%s' "SharedKeyLite devstoreaccount1:AAAA" "" "/devstoreaccount1/Tables" > "corpus/$target/lite"
      printf '\n%s\n%s' "sv=2019-02-02&tn=t&sp=raud&st=2020-01-01T00:00:00Z&se=2099-01-01T00:00:00Z&spk=a&epk=z&sig=AAAA" "/devstoreaccount1/t()" > "corpus/$target/sas" ;;
    filter)
      printf '%s' "PartitionKey eq 'a' and (Age gt 30 or not Active) and Created ge datetime'2020-01-01T00:00:00Z'" > "corpus/$target/f" ;;
  esac
}
for t in "${targets[@]}"; do
  seed "$t"
  echo "== $t (${seconds}s)"
  RUSTC_BOOTSTRAP=1 cargo fuzz run --sanitizer none "$t" "corpus/$t" -- \
    -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048
done

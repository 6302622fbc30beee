//! Hot-path codecs, one group each: entity JSON decode and encode (the request and response
//! bodies), the store's binary value codec (full decode and the in-place property read that
//! filters use), key encoding, and `$batch` multipart parsing of an SDK-captured body.
//!
//! `cargo bench --bench codecs` (add a group name, e.g. `-- json`, to run one group).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use tablestore::model::{EdmDateTime, Entity};
use tablestore::protocol::batch::{decode_batch, BatchBody, SubRequest};
use tablestore::protocol::headers::Metadata;
use tablestore::protocol::json::{self, EntityContext};
use tablestore::store::encoding::{codec, key};

/// The load benchmark's entity shape: ten properties of eight EDM types, ~1 KiB of JSON.
const ENTITY_JSON: &str = r#"{"PartitionKey":"p042","RowKey":"r0000012345",
"Name":"entity number 12345 of the benchmark table",
"Description":"Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud exercitation ullamco laboris nisi ut aliquip ex ea commodo consequat. Duis aute irure dolor in reprehenderit in voluptate velit esse cillum dolore eu fugiat nulla pariatur. Excepteur sint occaecat cupidatat non proident, sunt in culpa qui officia deserunt mollit anim id est laborum.",
"Count":12345,"Bucket":345,
"Big@odata.type":"Edm.Int64","Big":"1234567890123",
"Score":0.5123,"Active":true,
"Created@odata.type":"Edm.DateTime","Created":"2026-11-21T10:11:12.1234567Z",
"Uid@odata.type":"Edm.Guid","Uid":"c9da6455-213d-42c9-9a79-3e9149a57833",
"Blob@odata.type":"Edm.Binary","Blob":"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0+P0BBQkNERUZHSElKS0xNTk9QUVJTVFVWV1hZWltcXV5fYGFiY2RlZmdoaWprbG1ub3BxcnN0dXZ3eHl6e3x9fn+AgYKDhIWGh4iJiouMjY6PkJGSk5SVlpeYmZqbnJ2en6ChoqOkpaanqKmqq6ytrq+wsbKztLW2t7i5uru8vb6/"}"#;

fn entity() -> Entity {
    let body = json::decode_entity(ENTITY_JSON.as_bytes()).expect("the sample entity decodes");
    Entity {
        partition_key: body.partition_key.expect("has PartitionKey"),
        row_key: body.row_key.expect("has RowKey"),
        timestamp: EdmDateTime::now(),
        properties: body.properties,
    }
}

fn bench_json(c: &mut Criterion) {
    let entity = entity();
    let mut group = c.benchmark_group("json");
    group.throughput(Throughput::Bytes(ENTITY_JSON.len() as u64));
    group.bench_function("decode_entity", |b| {
        b.iter(|| json::decode_entity(black_box(ENTITY_JSON.as_bytes())).unwrap())
    });
    for metadata in [Metadata::None, Metadata::Minimal, Metadata::Full] {
        let ctx = EntityContext {
            metadata,
            base_url: "http://127.0.0.1:10002/devstoreaccount1",
            account: "devstoreaccount1",
            table: "benchtable",
            select: None,
            select_raw: None,
            dialect: &tablestore::protocol::dialect::STORAGE,
        };
        group.bench_function(format!("encode_entity/{metadata:?}"), |b| {
            b.iter(|| json::encode_entity(black_box(&entity), &ctx))
        });
    }
    group.finish();
}

fn bench_value_codec(c: &mut Criterion) {
    let entity = entity();
    let stored = codec::encode_entity(entity.timestamp, &entity.properties);
    let mut group = c.benchmark_group("value_codec");
    group.throughput(Throughput::Bytes(stored.len() as u64));
    group.bench_function("encode", |b| {
        b.iter(|| codec::encode_entity(entity.timestamp, black_box(&entity.properties)))
    });
    group.bench_function("decode", |b| {
        b.iter(|| codec::decode_entity(black_box(&stored)).unwrap())
    });
    // What a filter on a non-key property costs per scanned row: no allocation, no decode.
    group.bench_function("read_one_property_in_place", |b| {
        b.iter(|| {
            codec::RawEntity::new(black_box(&stored))
                .property("Bucket")
                .unwrap()
        })
    });
    group.finish();
}

fn bench_keys(c: &mut Criterion) {
    let encoded = key::entity_key(42, "p042", "r0000012345");
    let mut group = c.benchmark_group("key");
    group.bench_function("entity_key", |b| {
        b.iter(|| key::entity_key(black_box(42), black_box("p042"), black_box("r0000012345")))
    });
    group.bench_function("entity_key/non_ascii", |b| {
        b.iter(|| key::entity_key(black_box(42), black_box("Müller"), black_box("行キー-😀")))
    });
    group.bench_function("decode_entity_key", |b| {
        b.iter(|| key::decode_entity_key(black_box(&encoded)).unwrap())
    });
    group.finish();
}

/// A change set of 100 inserts, built from an SDK-captured change set's framing.
fn batch_body() -> (String, String) {
    let boundary = "batch_c1ba43bc-15b1-4e4f-beb9-8d953e2cf876";
    let changeset = "changeset_c76a239b-648d-4b27-b5d1-2064d4cc682d";
    let mut body =
        format!("--{boundary}\r\nContent-Type: multipart/mixed; boundary={changeset}\r\n\r\n");
    let entity_json = ENTITY_JSON.replace('\n', "");
    for i in 0..100 {
        let json = entity_json.replace("r0000012345", &format!("r{i:010}"));
        body.push_str(&format!(
            "--{changeset}\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\nContent-ID: {i}\r\n\r\n\
             POST http://127.0.0.1:10002/devstoreaccount1/benchtable HTTP/1.1\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\nx-ms-version: 2019-02-02\r\n\
             DataServiceVersion: 3.0\r\nAccept: application/json;odata=minimalmetadata\r\n\
             Prefer: return-no-content\r\n\r\n{json}\r\n",
            json.len()
        ));
    }
    body.push_str(&format!("--{changeset}--\r\n\r\n--{boundary}--\r\n"));
    (format!("multipart/mixed; boundary={boundary}"), body)
}

fn bench_batch(c: &mut Criterion) {
    let (content_type, body) = batch_body();
    let parsed = decode_batch(&content_type, body.as_bytes()).expect("the sample batch decodes");
    assert_eq!(
        batch_requests(&parsed).len(),
        100,
        "the sample is one change set of 100"
    );
    let mut group = c.benchmark_group("batch");
    group.throughput(Throughput::Elements(100));
    group.bench_function("decode_100_inserts", |b| {
        b.iter(|| decode_batch(black_box(&content_type), black_box(body.as_bytes())).unwrap())
    });
    group.bench_function("decode_100_inserts_and_entity_bodies", |b| {
        b.iter(|| {
            let batch = decode_batch(&content_type, black_box(body.as_bytes())).unwrap();
            let mut properties = 0;
            for request in batch_requests(&batch) {
                properties += json::decode_entity(&request.body).unwrap().properties.len();
            }
            properties
        })
    });
    group.finish();
}

criterion_group!(
    benches,
    bench_json,
    bench_value_codec,
    bench_keys,
    bench_batch
);
criterion_main!(benches);

fn batch_requests(batch: &BatchBody) -> &[SubRequest] {
    match batch {
        BatchBody::Changeset(requests) => requests,
        BatchBody::Query(request) => std::slice::from_ref(request),
    }
}

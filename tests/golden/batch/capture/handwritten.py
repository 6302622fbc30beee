#!/usr/bin/env python3
"""Writes the hand-made fixtures of tests/golden/batch/ (no SDK involved).

  spec_sample          the sample request of Azure docs: "Performing entity group
                       transactions", verbatim, CRLF
  legacy_lf_lowercase  legacy/.NET-era variations: bare LF, lower/odd-case header names,
                       Content-ID among the inner headers, non-GUID and quoted boundaries after
                       another parameter, %27-encoded keys, a MERGE without a body, trailing
                       whitespace on a delimiter, no closing "--" on the batch
  legacy_query         a query batch (one GET directly in the batch part), laid out like the
                       azure-storage-node requests recorded against Azure: %27 keys, content-id
                       among the inner headers, no line break after the closing delimiter

Usage: handwritten.py [out-dir]   (default: the parent directory of this script)
"""
import os
import sys

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def write(name, lines, content_type, eol="\r\n"):
    with open(os.path.join(OUT, name + ".http"), "wb") as f:
        f.write(eol.join(lines).encode())
    with open(os.path.join(OUT, name + ".content-type"), "w") as f:
        f.write(content_type)


write("spec_sample", [
    "--batch_a1e9d677-b28b-435e-a89e-87e6a768a431",
    "Content-Type: multipart/mixed; boundary=changeset_8a28b620-b4bb-458c-a177-0959fb14c977",
    "",
    "--changeset_8a28b620-b4bb-458c-a177-0959fb14c977",
    "Content-Type: application/http",
    "Content-Transfer-Encoding: binary",
    "",
    "POST http://127.0.0.1:10002/devstoreaccount1/Blogs HTTP/1.1",
    "Content-Type: application/json",
    "Accept: application/json;odata=minimalmetadata",
    "Prefer: return-no-content",
    "DataServiceVersion: 3.0;",
    "",
    '{"PartitionKey":"Channel_19","RowKey":"1","Rating":9,"Text":".NET..."}',
    "--changeset_8a28b620-b4bb-458c-a177-0959fb14c977",
    "Content-Type: application/http",
    "Content-Transfer-Encoding: binary",
    "",
    "MERGE http://127.0.0.1:10002/devstoreaccount1/Blogs(PartitionKey='Channel_19',RowKey='3') HTTP/1.1",
    "Content-Type: application/json",
    "Accept: application/json;odata=minimalmetadata",
    "If-Match: *",
    "DataServiceVersion: 3.0;",
    "",
    '{"PartitionKey":"Channel_19","RowKey":"3","Rating":9,"Text":"PDC 2008..."}',
    "--changeset_8a28b620-b4bb-458c-a177-0959fb14c977--",
    "--batch_a1e9d677-b28b-435e-a89e-87e6a768a431--",
    "",
], "multipart/mixed; boundary=batch_a1e9d677-b28b-435e-a89e-87e6a768a431")

write("legacy_lf_lowercase", [
    "--batch_blahblahblah",
    'content-type: multipart/mixed;charset="utf-8";boundary="changeset_blahblah"',
    "",
    "--changeset_blahblah",
    "content-type: application/http",
    "content-transfer-encoding: binary",
    "",
    "POST http://localhost:10002/devstoreaccount1/Blogs HTTP/1.1",
    "Content-Id: 1",
    "content-type: application/json",
    "accept: application/json;odata=minimalmetadata",
    "prefer: return-no-content",
    "Dataserviceversion: 3.0;",
    "",
    '{"PartitionKey":"Channel_19","RowKey":"1","Rating":9}',
    "--changeset_blahblah",
    "Content-Transfer-Encoding: binary",
    "Content-Type: application/http",
    "",
    "PUT http://localhost:10002/devstoreaccount1/Blogs(PartitionKey=%27Channel_19%27,RowKey=%272%27) HTTP/1.1",
    "Content-Id: 2",
    "content-type: application/json",
    "if-match: W/\"datetime'2013-10-14T18%3A25%3A49.8922467Z'\"",
    "",
    '{"PartitionKey":"Channel_19","RowKey":"2","Rating":3}',
    "--changeset_blahblah",
    "content-type: application/http",
    "content-transfer-encoding: binary",
    "",
    "MERGE http://localhost:10002/devstoreaccount1/Blogs(PartitionKey=%27Channel_19%27,RowKey=%273%27) HTTP/1.1",
    "Content-Id: 3",
    "if-match: *",
    "",
    "--changeset_blahblah",
    "content-type: application/http",
    "content-transfer-encoding: binary",
    "",
    "DELETE http://localhost:10002/devstoreaccount1/Blogs(PartitionKey=%27Channel_19%27,RowKey=%274%27) HTTP/1.1",
    "Content-Id: 4",
    "if-match: *",
    "",
    "--changeset_blahblah-- ",
    "--batch_blahblahblah",
    "",
], 'multipart/mixed; charset="utf-8"; boundary="batch_blahblahblah"', eol="\n")

write("legacy_query", [
    "--batch_0000000-0000-0000-0000-000000000000",
    "Content-Type: application/http",
    "Content-Transfer-Encoding: binary",
    "",
    "GET https://dummy.table.core.windows.net/testtable(PartitionKey=%27tests%27,RowKey=%27insert1%27) HTTP/1.1",
    "content-id: 0",
    "accept: application/json;odata=minimalmetadata",
    "",
    "--batch_0000000-0000-0000-0000-000000000000--",
], "multipart/mixed; boundary=batch_0000000-0000-0000-0000-000000000000")

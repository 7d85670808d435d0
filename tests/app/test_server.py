"""The app's HTTP API on a live local server (NDJSON progress for sweeps, errors as JSON)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request


def post(url: str, body: dict) -> tuple[int, bytes]:
    request = urllib.request.Request(
        url, json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def events(payload: bytes) -> list[dict]:
    return [json.loads(line) for line in payload.decode().splitlines() if line]


def test_index_and_info(app_url):
    with urllib.request.urlopen(app_url + "/", timeout=10) as response:
        page = response.read().decode()
    assert "CID playground" in page and "Content-Security-Policy" in page
    with urllib.request.urlopen(app_url + "/api/info", timeout=10) as response:
        info = json.loads(response.read())
    assert info["kind"] == "causal-lm" and 1901 in info["detector_dates"]


def test_detect_streams_progress_then_the_result(app_url):
    status, payload = post(
        app_url + "/api/detect", {"sentence": "The nurse said that [MASK] left."}
    )
    stream = events(payload)
    assert status == 200 and "progress" in stream[0]
    result = stream[-1]["result"]
    assert result["verdict"] in ("unspecified", "well-specified")
    assert result["plot"].startswith("data:image/png;base64,") and len(result["rows"]) == 24


def test_dose_and_cid(app_url):
    _, payload = post(
        app_url + "/api/dose",
        {"sentence": "In [DATE], [MASK] was a nurse.", "values": ["1900", "2000"]},
    )
    assert [r["value"] for r in events(payload)[-1]["result"]["rows"]] == ["1900", "2000"]
    status, payload = post(
        app_url + "/api/cid", {"x": "the doctor said", "x_prime": "the nurse said", "lam": 2}
    )
    assert status == 200 and "cid_x" in json.loads(payload)


def test_bad_input_is_reported_not_raised(app_url):
    _, payload = post(app_url + "/api/detect", {"sentence": "no mask"})
    assert "exactly one [MASK]" in events(payload)[-1]["error"]
    status, payload = post(app_url + "/api/cid", {"x": "", "x_prime": "b", "lam": 1})
    assert status == 400 and "x is empty" in json.loads(payload)["error"]
    status, _ = post(app_url + "/api/cid", {"x": "a", "x_prime": "b", "lam": -3})
    assert status == 422  # schema validation

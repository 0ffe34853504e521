"""`tailor view`: a local viewer over run directories of every kind (pairwise eval, gen-eval, train-rm's held-out
evaluation, stage reports), served on loopback or written as a static site that opens from disk (docs/view.md).

`index.py` builds one compact columnar index per run (cached beside the run, keyed by a hash of its verdicts),
`site.py` turns indexes into the site's files (the page, its script and style, `data-N.js` per run and lazily
loaded text shards), `server.py` serves them with a strict Content-Security-Policy; the browser filters in
JavaScript (`static/view.js`), and every model text reaches the page through `textContent`.
"""

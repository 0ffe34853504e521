"""How tailorbench talks to models: one module per backend. Heavy libraries are imported inside backends."""

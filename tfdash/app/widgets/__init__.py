"""The dashboard's widgets. Each renders from a ProfileSnapshot (or plain values derived from one)."""

"""aeron_compat: the Aeron programming model, carried by Aqueduct channels."""

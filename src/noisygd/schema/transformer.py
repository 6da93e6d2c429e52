"""``SchemaTransformer``: a scikit-learn transformer that encodes a DataFrame by a schema.

It learns nothing from the data: ``fit`` only validates the schema and the column names, and
``transform`` maps each row by public constants (see :mod:`noisygd.schema.encode`). It works
in a ``Pipeline`` and in a ``ColumnTransformer``; in the latter, each transformer bounds its own
block, so the concatenated row has norm at most ``sqrt(sum B_j^2)``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from noisygd.schema.encode import (
    check_columns,
    encode_features,
    feature_names,
    public_centring,
)
from noisygd.schema.model import TableSchema, load_schema, parse_schema

__all__ = ["SchemaTransformer", "as_schema"]


def as_schema(schema: Any) -> TableSchema:
    """A :class:`TableSchema` from a schema, a dict (parsed TOML) or a path to a TOML file."""
    if isinstance(schema, TableSchema):
        return schema
    if isinstance(schema, (str, Path)):
        return load_schema(schema)
    if isinstance(schema, dict):
        return parse_schema(schema)
    raise TypeError("schema must be a TableSchema, a dict or the path of a TOML schema file; "
                    f"got {type(schema).__name__}")


class SchemaTransformer(TransformerMixin, BaseEstimator):
    """Encode a DataFrame into the bounded design matrix a schema declares.

    Each row is encoded from its own values and the schema's public constants only (bounds
    with clipping, declared levels, transforms), then scaled so that
    ``||x_i||_2 <= row_norm_bound`` (:mod:`noisygd.schema.encode`). No statistic of the data
    is computed, so the transformer costs no privacy; ``fit`` learns nothing.

    Parameters
    ----------
    schema : TableSchema, dict or path
        The schema (:func:`noisygd.schema.load_schema` reads a TOML file).

    Attributes
    ----------
    schema_ : TableSchema
        The validated schema.
    feature_names_in_ : ndarray of str
        The input columns seen by ``fit`` (header names, not data).
    n_features_in_ : int

    Examples
    --------
    >>> import pandas as pd
    >>> from noisygd.schema import SchemaTransformer
    >>> schema = {"row_norm_bound": 1.0,
    ...           "columns": {"age": {"kind": "numeric", "bounds": [0, 100]},
    ...                       "pet": {"kind": "categorical", "levels": ["cat", "dog"]}}}
    >>> X = SchemaTransformer(schema).fit_transform(
    ...     pd.DataFrame({"age": [50, 200], "pet": ["dog", "cat"]}))
    >>> X.round(4).tolist()
    [[0.3536, 0.0, 0.7071], [0.7071, 0.7071, 0.0]]
    """

    def __init__(self, schema: Any) -> None:
        self.schema = schema

    def _frame(self, X: Any) -> Any:
        from noisygd.oracles.dask import is_dask_collection

        if is_dask_collection(X) and hasattr(X, "map_partitions") and X.ndim == 2:
            return X  # a Dask DataFrame: encoded partition-wise (noisygd.schema.partitionwise)
        if not isinstance(X, pd.DataFrame):
            raise TypeError("SchemaTransformer needs a pandas DataFrame whose column names are "
                            f"the schema's; got {type(X).__name__}")
        return X

    def fit(self, X: Any, y: Any = None) -> SchemaTransformer:
        """Validate the schema and ``X``'s column names; learns nothing from the rows."""
        schema = as_schema(self.schema)
        schema.check_public("SchemaTransformer (it learns nothing from the rows)")
        frame = self._frame(X)
        check_columns(schema, frame.columns, "the DataFrame", need_target=False)
        self.schema_ = schema
        self.feature_names_in_ = np.asarray([str(c) for c in frame.columns], dtype=object)
        self.n_features_in_ = len(frame.columns)
        return self

    def transform(self, X: Any) -> Any:
        """The encoded matrix, float64 of shape ``(n_rows, len(get_feature_names_out()))``;
        for a Dask DataFrame, a Dask array of the partitions encoded on the workers
        (:func:`noisygd.schema.partitionwise.encode_features_partitionwise`; the estimators
        fit it on the cluster, docs/dask.md)."""
        check_is_fitted(self, "schema_")
        frame = self._frame(X)
        check_columns(self.schema_, frame.columns, "the DataFrame", need_target=False)
        if not isinstance(frame, pd.DataFrame):
            from noisygd.schema.partitionwise import encode_features_partitionwise

            return encode_features_partitionwise(self.schema_, frame,
                                                 "the DataFrame").to_dask_array()
        return encode_features(self.schema_, frame, "the DataFrame")

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        """``age``, ``job=admin.``, ``job=<missing>``, ... (from the schema)."""
        schema = getattr(self, "schema_", None) or as_schema(self.schema)
        return np.asarray(feature_names(schema), dtype=object)

    def public_centring(self):
        """The schema's public centre and radius (:func:`noisygd.schema.encode.public_centring`),
        for an estimator's ``feature_bounds=``."""
        schema = getattr(self, "schema_", None) or as_schema(self.schema)
        return public_centring(schema)

    def __sklearn_tags__(self):  # public tag API (scikit-learn >= 1.6)
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.string = True
        return tags

